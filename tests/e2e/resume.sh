#!/usr/bin/env bash
# A command build killed half-way resumes where it stopped (tests/fixtures/resumable: five .cu
# files of some seconds each and a .cpp, torch's ninja, one at a time):
#   1. an uninterrupted build, in a cache of its own: the reference bytes; each step's peak
#      memory in its record and summary, the heaviest learned for the next plan's job count;
#   2. a build stopped by SIGTERM (a CI time limit) to opforge alone once 2 steps are finished:
#      its scratch tree stays, dist/ stays empty, the peaks it measured are learned;
#   3. the next build says it resumes the tree and is killed by SIGKILL once 4 steps are finished:
#      the steps of 2 were not run again;
#   4. the next build finishes: "resumed: N of 6 compile steps reused", N the steps finished
#      before, none of them compiled again (ninja's log and the record's inputs.ninja_steps), the
#      wheel byte-identical to 1's, its extension imports, the tree removed.
# usage: resume.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
opforge=$(realpath "$1") src=$2 work=$(realpath -m "$3")
. "$src/tests/e2e/lib.sh"
venv=${OPFORGE_TORCH214_VENV:-$HOME/.cache/opforge/torch214-venv}
need_venv "$venv"
rm -rf "$work" && mkdir -p "$work"
cp -r "$src/tests/fixtures/resumable" "$work/proj"
cat > "$work/proj/opforge.toml" <<TOML
[package]
name = "resumable"
version = "1.0.0"
local_version = "none"

[cuda]
version = "torch"
python = "$venv/bin/python"

[arch]
list = "9.0"

[build]
backend = "command"
command = ["$venv/bin/python", "setup.py", "bdist_wheel"]
jobs = 1
TOML
export SOURCE_DATE_EPOCH=1700000000
unset CUDA_HOME CUDA_PATH TORCH_CUDA_ARCH_LIST MAX_JOBS
build() {  # build CACHE NAME: builds into $work/NAME.dist, output in $work/NAME.log
  (cd "$work/proj" && OPFORGE_CACHE_DIR="$1" "$opforge" build opforge.toml --build-dir "$work/$2.build" \
    --dist-dir "$work/$2.dist") > "$work/$2.log" 2>&1
}
finished() {  # finished: "output<TAB>line" of each step ninja's logs in the kept tree record as done
  python3 - "$work/cache/trees" <<'PY'
import glob, os, sys
for log in glob.glob(os.path.join(sys.argv[1], "*", "build", "*", ".ninja_log")):
    last = {}
    for line in open(log):
        f = line.rstrip("\n").split("\t")
        if len(f) >= 5 and not line.startswith("#"):
            last[f[3]] = line.rstrip("\n")
    for out, line in sorted(last.items()):
        print(out + "\t" + line)
PY
}
stop_after() {  # stop_after N SIGNAL NAME: a build in the background, sent SIGNAL once N steps are done
  (cd "$work/proj" && OPFORGE_CACHE_DIR="$work/cache" exec "$opforge" build opforge.toml --build-dir "$work/$3.build" \
    --dist-dir "$work/$3.dist") > "$work/$3.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 1200); do
    [ "$(finished | wc -l)" -ge "$1" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/$3.log"; fail "$3: the build ended before $1 steps were done"; }
    sleep 0.1
  done
  kill -"$2" "$pid"
  wait "$pid" 2>/dev/null && fail "$3: the build was not stopped by SIG$2"
  # Its compilers end with it (the watchdog); the next build waits for the tree's lock anyway.
  [ -z "$(ls "$work/$3.dist" 2>/dev/null)" ] || fail "$3: SIG$2 left files in dist/"
  echo "$3: SIG$2 after $(finished | wc -l) finished steps"
}
sha() { sha256sum "$1" | cut -d' ' -f1; }

t0=$(date +%s)
build "$work/cache-ref" ref || { tail -30 "$work/ref.log"; fail "the uninterrupted build"; }
ref=$(only_wheel "$work/ref.dist")
echo "uninterrupted build: $(( $(date +%s) - t0 )) s"
python3 - "$ref.opforge-record.json" <<'PY' || fail "the reference record"
import json, sys
n = json.load(open(sys.argv[1]))["inputs"]["ninja_steps"]
assert n["resumed"] is False and n["reused"] == 0 and n["compiled"] == 6, n
assert len(n["seconds"]) == 6, n
PY
grep -q "^resumed:" "$work/ref.log" && fail "a fresh build says it resumed"
# Each compile step's peak: in the record and the summary, and learned for the next job count.
python3 - "$ref.opforge-record.json" "$work/cache-ref/compile-peaks.json" <<'PY' || fail "the step peaks"
import json, sys
steps = json.load(open(sys.argv[1]))["inputs"]["step_peaks"]
cu = {s: v for s, v in steps.items() if s.endswith(".cu")}
assert len(cu) == 5 and all(v["peak_kib"] > 0 for v in cu.values()), steps
learned = json.load(open(sys.argv[2]))["steps:resumable"]
assert learned == max(v["peak_kib"] for v in steps.values()), (learned, steps)
PY
grep -q "^memory: [0-9]* compile steps, 1 at once; the heaviest part[0-4].cu " "$work/ref.log" || fail "no memory line"
sed '/^jobs = 1/d' "$work/proj/opforge.toml" > "$work/proj/auto.toml"
(cd "$work/proj" && OPFORGE_CACHE_DIR="$work/cache-ref" "$opforge" plan auto.toml) > "$work/plan.log" 2>&1 || fail "plan"
grep -q "^jobs .* GiB per compile (recorded))$" "$work/plan.log" || { grep -n jobs "$work/plan.log"; fail "the job count did not learn"; }

stop_after 2 TERM first
tree=$(ls -d "$work"/cache/trees/*/)
[ -f "$tree/.opforge-resume" ] || fail "the stopped build left no resumable tree"
# The steps' peaks are learned while they run: the stopped build has passed them on already.
grep -q '"steps:resumable": [1-9]' "$work/cache/compile-peaks.json" || fail "the stopped build learned no peak"
finished > "$work/after-first"

stop_after 4 KILL second
grep -q "^opforge: resuming the build tree an interrupted build left" "$work/second.log" || { head -20 "$work/second.log"; fail "the second build did not resume"; }
finished > "$work/after-second"
# Every step finished by the first build has the same line in ninja's log: it did not run again.
while IFS= read -r line; do
  grep -qxF "$line" "$work/after-second" || fail "the second build ran a finished step again: ${line%%$'\t'*}"
done < "$work/after-first"

build "$work/cache" third || { tail -30 "$work/third.log"; fail "the resumed build"; }
done_before=$(wc -l < "$work/after-second")
grep -x "resumed: $done_before of 6 compile steps reused from the tree an interrupted build left, $(( 6 - done_before )) compiled" "$work/third.log" \
  || { grep -n "resum" "$work/third.log"; fail "the resumed build does not say what it reused"; }
wheel=$(only_wheel "$work/third.dist")
python3 - "$wheel.opforge-record.json" "$work/after-second" "$ref.opforge-record.json" <<'PY' || fail "the resumed build's record"
import json, sys
inputs = json.load(open(sys.argv[1]))["inputs"]
n = inputs["ninja_steps"]
# What the project asked nvcc for, gathered over the three runs: the uninterrupted build's.
assert inputs["arch"] == json.load(open(sys.argv[3]))["inputs"]["arch"], inputs["arch"]
before = {l.split("\t")[0] for l in open(sys.argv[2]) if l.strip()}
assert n["resumed"] is True and n["reused"] == len(before) and n["compiled"] == 6 - len(before), n
again = [o for o in n["seconds"] if o.split("/")[-1] in {b.split("/")[-1] for b in before}]
assert not again, "compiled again: %s" % again
PY
[ "$(sha "$wheel")" = "$(sha "$ref")" ] || fail "the resumed wheel differs from the uninterrupted build's"
[ -e "$tree" ] && fail "the finished build left its scratch tree"
mkdir -p "$work/site" && (cd "$work/site" && python3 -m zipfile -e "$wheel" .)
PYTHONPATH="$work/site" "$venv/bin/python" -c "import resumable; assert resumable.parts() == 5" || fail "import"
echo "resumed: $done_before of 6 steps reused; the wheel is the uninterrupted build's bytes ($(sha "$wheel"))"
echo "PASS"
