#!/usr/bin/env python3
"""Measurements of opforge's C++ under src/ (src/kernels/ and src/python/ left out): the numbers that
say whether a refactor made the code easier to read and change, printed the same way each time so
that a "before" and an "after" compare line by line.

  tools/codebase_stats.py [--root DIR] [--no-duplicates]

  files              how many .cpp/.h files, and of them cli/'s (the rest is the core library)
  lines              the median and the largest file, in lines
  most included      the header the most files include, from how many files and top-level folders
  upward includes    includes that run back up docs/architecture.md's "## Layering" list, read as
                     tests/architecture_layering_test.cpp reads it; "sideways" are those a line's
                     "x/ uses y/" allows
  machine literals   files outside src/target/ with a string literal naming a machine
                     ("x86_64", "aarch64"; inside a longer literal too, #include lines left out),
                     and how many literals are the bare name
  project_build      call sites of `recipe::project_build(`, by folder
  duplicates         `duplicates --repo src --most 200` (a command on PATH), its first line and
                     how many pairs it lists (and how many have neither side in kernels/ or
                     python/), then its rows

DIR is the repository's root (default: the one this file is in). Python 3 standard library only.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys

MACHINES = ("x86_64", "aarch64")
PROJECT_BUILD = "recipe::project_build("


def sources(src):
    """{path relative to src/: text} of every .cpp/.h, kernels/ and python/ left out."""
    out = {}
    for folder, dirs, files in os.walk(src):
        rel_dir = os.path.relpath(folder, src)
        if rel_dir == ".":
            dirs[:] = [d for d in dirs if d not in ("kernels", "python")]
        dirs.sort()
        for f in sorted(files):
            if f.endswith((".cpp", ".h")):
                rel = os.path.normpath(os.path.join(rel_dir, f))
                with open(os.path.join(folder, f), encoding="utf-8", errors="replace") as fh:
                    out[rel] = fh.read()
    return out


def read_layers(page):
    """docs/architecture.md's "## Layering" block, read as tests/architecture_layering_test.cpp's
    read_layers does: (folder -> level, set of (from, to) sideways, set of headers anywhere)."""
    level, sideways, anywhere = {}, set(), set()
    at = page.find("## Layering")
    if at < 0:
        return level, sideways, anywhere
    start = page.find("```", at)
    end = page.find("```", start + 3)
    n = 0
    for line in page[start + 3 : end].split("\n"):
        any_ = False
        for w in line.split():
            if "." in w and "/" in w and not any_:
                anywhere.add(w)
                any_ = True
                break
            if len(w) < 2 or not w.endswith("/") or re.search(r"[^a-z_/]", w):
                break
            level[w[:-1]] = n
            any_ = True
        for m in re.finditer(r"([a-z_]+)/ uses ([a-z_]+)/", line):
            sideways.add((m.group(1), m.group(2)))
        if any_:
            n += 1
    return level, sideways, anywhere


def string_literals(text):
    """The contents of the C++ string literals of `text` (comments and character literals
    skipped; raw strings R"d(...)d" read whole)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c == "R" and i + 1 < n and text[i + 1] == '"' and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_ = text.find("(", i + 2)
            delim = text[i + 2 : open_]
            close = text.find(")" + delim + '"', open_)
            if open_ < 0 or close < 0:
                break
            out.append(text[open_ + 1 : close])
            i = close + len(delim) + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if c == '"':
                out.append(text[i + 1 : j])
            i = j + 1
        elif c.isalnum() or c == "_":
            # A whole word: a digit separator (1'000) or a u8"" prefix is not a quote of its own.
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_" or (text[j] == "'" and j + 1 < n and text[j + 1].isalnum() and text[i].isdigit())):
                j += 1
            if j < n and text[j] == '"' and text[i:j] in ("u8", "u", "U", "L"):
                i = j
            elif j < n and text[j] == '"' and text[i:j] in ("u8R", "uR", "UR", "LR"):
                i = j - 1
            else:
                i = j
        else:
            i += 1
    return out


INCLUDE = re.compile(r'#include "([^"]+)"')
LAYER_INCLUDE = re.compile(r'#include "([a-z_]+)/([^"]+)"')


def resolve(rel, header, files):
    """The file under src/ that `#include "header"` in `rel` names, or None (generated, system)."""
    beside = os.path.normpath(os.path.join(os.path.dirname(rel), header))
    if beside in files:
        return beside
    return header if header in files else None


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=here)
    ap.add_argument("--no-duplicates", action="store_true")
    args = ap.parse_args()
    src = os.path.join(args.root, "src")
    files = sources(src)
    if not files:
        sys.exit(f"codebase_stats: no .cpp/.h under {src}")

    # Files and their lines.
    lines = {rel: text.count("\n") + (0 if text.endswith("\n") or not text else 1) for rel, text in files.items()}
    cli = [r for r in files if r.startswith("cli/")]
    largest = max(sorted(lines), key=lambda r: lines[r])
    print(f"files: {len(files)} .cpp/.h under src/ (kernels/ and python/ left out): {len(files) - len(cli)} core, {len(cli)} cli/")
    print(f"lines: {sum(lines.values())} in all, median {statistics.median(lines.values()):g}, largest src/{largest} ({lines[largest]})")
    over = sorted((r for r in lines if lines[r] > 500), key=lambda r: -lines[r])
    print(f"files over 500 lines: {len(over)}" + (": " + ", ".join(f"{r} ({lines[r]})" for r in over) if over else ""))

    # Fan-in of each header.
    fan_in = {}
    for rel, text in files.items():
        for m in INCLUDE.finditer(text):
            to = resolve(rel, m.group(1), files)
            if to and to != rel:
                fan_in.setdefault(to, set()).add(rel)
    ranked = sorted(fan_in, key=lambda h: (-len(fan_in[h]), h))
    for place, h in enumerate(ranked[:5]):
        folders = {r.split("/")[0] for r in fan_in[h]}
        label = "most included" if place == 0 else "then"
        print(f"{label}: {h}, by {len(fan_in[h])} files in {len(folders)} top-level folders")

    # The layers, as the layering test reads them.
    with open(os.path.join(args.root, "docs", "architecture.md"), encoding="utf-8") as fh:
        level, sideways_allowed, anywhere = read_layers(fh.read())
    upward, sideways, checked = [], [], 0
    for rel, text in sorted(files.items()):
        frm = rel.split("/")[0]
        if frm not in level:
            continue
        for m in LAYER_INCLUDE.finditer(text):
            to = m.group(1)
            if to not in level or to == frm:
                continue
            checked += 1
            if f"{to}/{m.group(2)}" in anywhere or level[to] < level[frm]:
                continue
            if level[to] == level[frm] and (frm, to) in sideways_allowed:
                sideways.append(f"src/{rel} -> {to}/{m.group(2)}")
                continue
            upward.append(f"src/{rel} -> {to}/{m.group(2)}")
    print(f"layers: {len(set(level.values()))} levels of folders in docs/architecture.md, {checked} includes across folders checked")
    print(f"upward includes: {len(upward)}" + "".join("\n  " + u for u in upward))
    print(f"sideways includes (a line's \"x/ uses y/\"): {len(sideways)}")

    # Machine names in string literals outside target/.
    named = {}
    for rel, text in sorted(files.items()):
        if rel.startswith("target/"):
            continue
        code = re.sub(r"(?m)^\s*#\s*include\b.*$", "", text)
        hits = [s for s in string_literals(code) if any(m in s for m in MACHINES)]
        if hits:
            named[rel] = (len(hits), sum(1 for s in hits if s in MACHINES))
    total = sum(k for k, _ in named.values())
    bare = sum(b for _, b in named.values())
    print(f"machine-name literals outside src/target/: {total} in {len(named)} files, {bare} of them the bare name"
          + "".join(f"\n  src/{r} ({k}, {b} bare)" for r, (k, b) in named.items()))

    # recipe::project_build( call sites, by folder.
    calls = {}
    for rel, text in sorted(files.items()):
        k = text.count(PROJECT_BUILD)
        if k:
            calls[rel] = k
    by_folder = {}
    for rel, k in calls.items():
        by_folder[rel.split("/")[0]] = by_folder.get(rel.split("/")[0], 0) + k
    outside_plan = sum(k for r, k in calls.items() if not r.startswith("plan/"))
    print(f"{PROJECT_BUILD} call sites: {sum(calls.values())} in {len(calls)} files, {outside_plan} outside plan/ ("
          + ", ".join(f"{f}/ {k}" for f, k in sorted(by_folder.items(), key=lambda x: (-x[1], x[0]))) + ")")

    if args.no_duplicates:
        return
    tool = shutil.which("duplicates")
    if not tool:
        print("duplicates: not on PATH")
        return
    r = subprocess.run([tool, "--repo", src, "--most", "200", "--seconds", "120"], capture_output=True, text=True)
    out = r.stdout.splitlines()
    rows = [l for l in out if re.match(r"\s*D\d+ ", l)]
    more = [int(m.group(1)) for l in out for m in [re.search(r"\(\+(\d+) more pairs\)", l)] if m]
    print(f"duplicates --repo src: {out[0] if out else '(no output)'}")
    core = [l for l in rows if not re.search(r"(^|\s)(kernels|python)/", l)]
    print(f"duplicate pairs listed: {len(rows)}" + (f" (+{more[0]} more)" if more else "")
          + f", {len(core)} with neither side in kernels/ or python/")
    for l in out[1:]:
        print("  " + l)


if __name__ == "__main__":
    main()
