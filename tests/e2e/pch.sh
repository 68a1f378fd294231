#!/usr/bin/env bash
# Precompiled torch headers ([build] pch) on a torch C++ extension of nine files
# (tests/fixtures/pch_extension), torch 2.15, one compile at a time where the header's counts are
# checked (-j 1: they are exact), two where they are not (the build without it, the ccache hits):
#   - built with --no-pch and gcc_gc_heap_mib = 0, then with both (gcc collecting its garbage
#     after 1 GiB) and --cache ccache in another folder: the same wheel bytes;
#   - with it: a header per flags and what the files read before torch/extension.h, made by the
#     first file of each (in ninja's order) once the extension's build.ninja names three files that need it
#     (<cache>/pch/<key>), and used by all three: module.cpp (through the project's ops.h), add.cpp
#     and scale.cpp; vector_first.cpp, vector_too.cpp and vector_three.cpp, whose header holds
#     <vector> first. detailed.cpp, alone with its #define first, never pays for one; code_first.cpp
#     (a declaration before the include) compiles without it and the summary says so; the file
#     without torch is left alone (the -MMD files are the unit tests' and ccache's below: the
#     scratch tree is gone after a build);
#   - the compiles go through ccache, and a second folder of the same build hits it for every
#     compile, the same bytes again;
#   - defines torch's headers may read (CFLAGS: a TORCH_ name) make new headers, the project's own
#     (PCHDEMO_VARIANT) do not split them (three of the files: what makes one header, no more);
#   - the record keeps whether it was on; `plan` shows it.
# usage: pch.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
opforge=$(realpath "$1") src=$2 work=$(realpath -m "$3")
. "$src/tests/e2e/lib.sh"
venv=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
need_venv "$venv"
command -v ccache >/dev/null || fail "ccache is not installed"
rm -rf "$work" && mkdir -p "$work"
export OPFORGE_CACHE_DIR="$work/cache" SOURCE_DATE_EPOCH=1700000000 CCACHE_DIR="$work/ccache"
unset CUDA_HOME CUDA_PATH TORCH_CUDA_ARCH_LIST MAX_JOBS CFLAGS CXXFLAGS
build() {  # build NAME [OPFORGE-FLAGS...]: the fixture in $work/NAME, built; prints the wheel
  local name=$1; shift
  rm -rf "$work/$name" && cp -r "$src/tests/fixtures/pch_extension" "$work/$name"
  cat >"$work/$name/opforge.toml" <<TOML
[package]
name = "pchdemo"
version = "0.1.0"
local_version = "none"

[cuda]
version = "torch"
python = "$venv/bin/python"

[build]
backend = "command"
command = ["$venv/bin/python", "setup.py", "bdist_wheel"]
${EXTRA:-}
TOML
  (cd "$work/$name" && "$opforge" build -j "${JOBS:-1}" "$@" opforge.toml) >"$work/$name.log" 2>&1 ||
    { tail -30 "$work/$name.log"; fail "$name: build"; }
  only_wheel "$work/$name/dist"
}
sha() { sha256sum "$1" | cut -d' ' -f1; }
pch_of() { python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1] + ".opforge-record.json"))["inputs"]["pch"], sort_keys=True))' "$1"; }

# Without: no precompiled header and gcc's own garbage-collection threshold ([build]
# gcc_gc_heap_mib = 0); with: both (1 GiB, the default). The same bytes for the two together.
off=$(JOBS=2 EXTRA=$'pch = true\ngcc_gc_heap_mib = 0' build off --no-pch)
grep -q "^precompiled torch header" "$work/off.log" && fail "off: a precompiled header line with --no-pch"
[ "$(pch_of "$off")" = '{"on": false, "why": "off (--no-pch)"}' ] || fail "off: the record's pch is $(pch_of "$off")"
gc_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1] + ".opforge-record.json"))["inputs"]["gcc_gc"]["heap_kib"])' "$1"; }
[ "$(gc_of "$off")" = 0 ] || fail "off: the record's gcc_gc heap is $(gc_of "$off")"

export EXTRA="pch = true"
on=$(build on --cache ccache)
[ "$(sha "$on")" = "$(sha "$off")" ] || fail "the wheel differs with the precompiled header and gcc's later collection"
[ "$(gc_of "$on")" = 1048576 ] || fail "on: the record's gcc_gc heap is $(gc_of "$on")"
grep -q -- "--param=ggc-min-heapsize=1048576" "$work"/cache/host/*/g++.rule.json || fail "on: the host wrappers do not pass gcc's heap size"
grep -q "^precompiled torch header: 2 made ([0-9]* s, [0-9]* MiB), used by 6 of 8 C++ compiles that include torch/extension.h; 1 compiled without it before 3 compiles needed the same one; 1 without it (below)$" \
  "$work/on.log" || { grep -n -A3 "^precompiled" "$work/on.log"; fail "on: the summary line"; }
grep -q "^  code_first.cpp: has code before torch/extension.h$" \
  "$work/on.log" || { grep -n -A3 "^precompiled" "$work/on.log"; fail "on: the file with code first"; }
entries=$(ls "$work/cache/pch" | grep -v '^\.')
[ "$(echo "$entries" | wc -l)" = 2 ] || fail "on: two headers in the cache: $entries"
for e in $entries; do [ -s "$work/cache/pch/$e/extension.h.gch" ] || fail "on: $e has no .gch"; done
grep -lx "#include <vector>" "$work"/cache/pch/*/extension.h >/dev/null || fail "on: no header holds <vector> first"
log=$work/on/build/opforge/pch.log
[ "$(cut -f1 "$log" | sort | tr '\n' ' ')" = "first made made plain skipped used used used used used used " ] &&
  [ "$(cut -f1,2 "$log" | sed 's|\t.*/|\t|' | grep -c '^made	\(module\|add\|scale\).cpp$')" = 1 ] &&
  [ "$(cut -f1,2 "$log" | sed 's|\t.*/|\t|' | grep -c '^made	vector_\(first\|too\|three\).cpp$')" = 1 ] ||
  { cat "$log"; fail "on: what each compile did"; }
python3 -c 'import json,sys; p=json.load(open(sys.argv[1] + ".opforge-record.json"))["inputs"]["pch"]; assert p["on"] and p["made"] == 2 and p["used"] == 6 and p["without"] == 2, p' \
  "$on" || fail "on: the record"

# A second folder of the same build hits ccache for every compile: the same bytes again.
ccache -z >/dev/null
second=$(JOBS=2 build on2 --cache ccache)
stats=$(ccache --print-stats)
hits=$(echo "$stats" | awk -F'\t' '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" {n += $2} END {print n + 0}')
misses=$(echo "$stats" | awk -F'\t' '$1 == "cache_miss" {print $2}')
[ "$hits" -ge 9 ] && [ "${misses:-0}" = 0 ] || { echo "$stats"; fail "on2: $hits hits, ${misses:-?} misses (expected every compile to hit)"; }
[ "$(sha "$second")" = "$(sha "$off")" ] || fail "on2: the wheel differs"

# Changed defines (the caller's CFLAGS, which setuptools adds to every compile): one whose name
# torch's headers may read makes a new header, the project's own is left out of its key. Three
# files that read torch/extension.h first are what makes one (PCHDEMO_SOURCES: the fixture's
# setup.py builds only those); their library is not loaded.
CFLAGS="-DPCHDEMO_VARIANT=2 -DTORCH_PCHDEMO_LEVEL=1" PCHDEMO_SOURCES="module.cpp add.cpp scale.cpp" build defines >/dev/null
grep -q "^precompiled torch header: 1 made" "$work/defines.log" ||
  { grep -n "^precompiled" "$work/defines.log"; fail "defines: no new header for a new define"; }
[ "$(ls "$work/cache/pch" | grep -cv '^\.')" = 3 ] || fail "defines: a changed define did not make a new header"

# plan shows it, and how the header is made and used.
(cd "$work/on" && "$opforge" plan opforge.toml) >"$work/plan.txt" 2>&1 || { cat "$work/plan.txt"; fail "plan"; }
grep -q "^pch           on: torch/extension.h precompiled once per compiler, flags, torch and what a file reads before it" "$work/plan.txt" &&
  grep -q "^  each file   .* -include .*/pch/<key>/extension.h -Winvalid-pch -g0$" "$work/plan.txt" &&
  grep -q "^gcc gc        collects once its heap passes 1024 MiB (--param=ggc-min-heapsize=1048576 on every host compile" "$work/plan.txt" ||
  { grep -n -A4 "^pch" "$work/plan.txt"; fail "plan: the pch lines"; }
echo "OK: precompiled torch header: the same wheel, two headers (one holding <vector> first), each made once three files need it and used by them, one file refused for its code, ccache hits in a second folder, a define torch may read a new header"
