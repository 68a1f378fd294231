#!/usr/bin/env bash
# The torch pin follows the linkage: three command builds with torch 2.14 (CUDA 13.0), no [matrix]:
#   a CUDA extension of torch's C++ ABI (tests/fixtures/cuda_extension) → Requires-Dist torch==2.14.*;
#     pip, offline, refuses it for torch 2.15's environment, and `pip check` names the conflict
#     when it is forced in (--no-deps, into a throwaway environment that sees torch 2.15);
#   an extension of torch's stable C ABI alone (tests/fixtures/torch_link/stable) → torch>=2.12,
#     the oldest release whose stable headers declare every function it calls (torch_tag_core),
#     which pip takes for torch 2.15;
#   a C extension without torch (tests/fixtures/torch_link/plainc) → no torch requirement;
#   and [wheel] torch_pin = false → the project's METADATA as it was.
# usage: torch_pin.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
opforge=$(realpath "$1") src=$2 work=$(realpath -m "$3")
. "$src/tests/e2e/lib.sh"
venv=${OPFORGE_TORCH214_VENV:-$HOME/.cache/opforge/torch214-venv}
venv215=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
need_venv "$venv" "$venv215"
rm -rf "$work" && mkdir -p "$work"
export OPFORGE_CACHE_DIR="$work/cache" SOURCE_DATE_EPOCH=1700000000
unset CUDA_HOME CUDA_PATH TORCH_CUDA_ARCH_LIST MAX_JOBS
build() {  # build NAME FIXTURE [EXTRA-RECIPE-LINES]: the fixture as a command build with torch 2.14
  cp -r "$2" "$work/$1"
  cat >"$work/$1/opforge.toml" <<TOML
[package]
name = "$1"
version = "0.1.0"
local_version = "none"

[arch]
list = "9.0"

[cuda]
version = "torch"
python = "$venv/bin/python"

[build]
backend = "command"
command = ["$venv/bin/python", "setup.py", "bdist_wheel"]
${3:-}
TOML
  (cd "$work/$1" && "$opforge" build opforge.toml) >"$work/$1.log" 2>&1 || { tail -30 "$work/$1.log"; fail "$1: build"; }
  only_wheel "$work/$1/dist"
}
requires() { unzip -p "$1" '*.dist-info/METADATA' | sed -n 's/^Requires-Dist: //p' | sort | tr '\n' ';'; }

cxx=$(build tinyscale "$src/tests/fixtures/cuda_extension")
[ "$(requires "$cxx")" = "torch==2.14.*;" ] || fail "tinyscale: Requires-Dist is '$(requires "$cxx")'"
grep -q "^torch: C++ ABI (tinyscale/_C.cpython-311-x86_64-linux-gnu.so: at::.*): Requires-Dist torch==2.14.\*$" \
  "$work/tinyscale.log" || { grep -n "^torch" "$work/tinyscale.log"; fail "tinyscale: the summary's torch line"; }
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["inputs"]["torch_linkage"]; assert t["abi"] == "C++ ABI" and t["requires"] == "torch==2.14.*", t' \
  "$cxx.opforge-record.json" || fail "tinyscale: the record's torch_linkage"
"$opforge" inspect "$cxx" | grep -q "torch: C++ ABI (loads with the torch it was built against only): at::" ||
  fail "tinyscale: inspect does not show the linkage"
# pip, offline, for torch 2.15's environment: refused.
if "$venv215/bin/python" -m pip install --dry-run --no-index --quiet "$cxx" >"$work/pip215.log" 2>&1; then
  fail "pip would install a torch 2.14 C++ ABI extension beside torch 2.15"
fi
grep -qi "torch==2.14" "$work/pip215.log" || { cat "$work/pip215.log"; fail "pip's refusal does not name torch==2.14.*"; }
# Forced in: pip check names the conflict.
"$venv215/bin/python" -m venv "$work/forced"
site=$("$work/forced/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$venv215/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' >"$site/torch215.pth"
"$work/forced/bin/python" -m pip install --quiet --no-deps --no-index "$cxx"
if "$work/forced/bin/python" -m pip check >"$work/check.log" 2>&1; then fail "pip check found no conflict"; fi
grep -q "tinyscale 0.1.0 has requirement torch==2.14.\*, but you have torch 2.15" "$work/check.log" ||
  { cat "$work/check.log"; fail "pip check does not name the torch conflict"; }

stable=$(build stableshim "$src/tests/fixtures/torch_link/stable")
[ "$(requires "$stable")" = "torch>=2.12;" ] || fail "stableshim: Requires-Dist is '$(requires "$stable")'"
grep -q "^torch: stable C ABI (stableshim/_C.cpython-311-x86_64-linux-gnu.so: aoti_torch_get_device_type, stableshim/_C.cpython-311-x86_64-linux-gnu.so: torch_tag_core): Requires-Dist torch>=2.12 (torch_tag_core: torch 2.12 and later)$" \
  "$work/stableshim.log" || { grep -n "^torch" "$work/stableshim.log"; fail "stableshim: the summary's torch line"; }
"$venv215/bin/python" -m pip install --dry-run --no-index --quiet "$stable" >"$work/pip215s.log" 2>&1 ||
  { cat "$work/pip215s.log"; fail "pip refuses a stable-ABI extension for a newer torch"; }

plain=$(build plainc "$src/tests/fixtures/torch_link/plainc")
[ -z "$(requires "$plain")" ] || fail "plainc: Requires-Dist is '$(requires "$plain")'"
grep -q "^torch: " "$work/plainc.log" && fail "plainc: a torch line for a wheel without torch"

# [wheel] torch_pin = false: nothing added.
off=$(build tinyscale_off "$src/tests/fixtures/cuda_extension" $'[wheel]\ntorch_pin = false')
[ -z "$(requires "$off")" ] || fail "torch_pin = false: Requires-Dist is '$(requires "$off")'"
grep -q "^torch: C++ ABI (.*): no Requires-Dist added (\[wheel\] torch_pin = false)$" "$work/tinyscale_off.log" ||
  { grep -n "^torch" "$work/tinyscale_off.log"; fail "torch_pin = false: the summary's torch line"; }
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["inputs"]["torch_linkage"]; assert t["requires"] == "torch>=2.12" and t["stable_symbols"] == ["aoti_torch_get_device_type", "torch_tag_core"] and t["floor"] == "torch_tag_core: torch 2.12 and later", t' \
  "$stable.opforge-record.json" || fail "stableshim: the record's torch_linkage"

# A [matrix] over torch 2.14 and 2.15 (the two environments, named): the stable-ABI wheel of the
# first cell serves the second, loaded with each torch; with share_stable_abi = false, two builds
# (the version label names each cell's torch, so two wheels).
matrix() {  # matrix NAME [EXTRA-MATRIX-LINES]
  cp -r "$src/tests/fixtures/torch_link/stable" "$work/$1"
  cat >"$work/$1/opforge.toml" <<TOML
[package]
name = "$1"
version = "0.1.0"
local_version = "torch{torch_major}{torch_minor}"

[arch]
list = "9.0"

[build]
backend = "command"
command = ["python", "setup.py", "bdist_wheel"]

[matrix]
torch = ["2.14", "2.15"]
environments = { "torch2.14-py3.11" = "$venv/bin/python", "torch2.15-py3.11" = "$venv215/bin/python" }
${2:-}
TOML
  local rc=0
  (cd "$work/$1" && "$opforge" build opforge.toml) >"$work/$1.log" 2>&1 || rc=$?
  [ "$rc" = 0 ] || { tail -30 "$work/$1.log"; fail "$1: build (exit $rc)"; }
}
matrix shared
grep -A20 "^== cell torch2.14-py3.11$" "$work/shared.log" | grep -q "^load check: torch 2.14.0+cu130 loads stableshim._C$" ||
  { cat "$work/shared.log"; fail "shared: the first cell's load check"; }
grep -A3 "^== cell torch2.15-py3.11$" "$work/shared.log" |
  grep -q "^served by cell torch2.14-py3.11's wheel (torch's stable C ABI alone, torch>=2.12): stableshim-0.1.0+torch214-cp311-" ||
  { cat "$work/shared.log"; fail "shared: the second cell is not served"; }
grep -A3 "^== cell torch2.15-py3.11$" "$work/shared.log" | grep -q "^load check: torch 2.15.0+cu132 loads stableshim._C$" ||
  { cat "$work/shared.log"; fail "shared: the second cell's load check"; }
grep -Eq "^torch2.15-py3.11 +shared +[0-9.]+ +stableshim-0.1.0\+torch214-cp311-cp311-.*\.whl \(cell torch2.14-py3.11's\)$" "$work/shared.log" ||
  { tail -5 "$work/shared.log"; fail "shared: the cells table"; }
[ "$(ls "$work/shared/dist/"*.whl | wc -l)" = 1 ] || { ls "$work/shared/dist"; fail "shared: not one wheel"; }
[ "$(requires "$(only_wheel "$work/shared/dist")")" = "torch>=2.12;" ] || fail "shared: Requires-Dist is '$(requires "$(only_wheel "$work/shared/dist")")'"
matrix separate 'share_stable_abi = false'
[ "$(ls "$work/separate/dist/"*.whl | wc -l)" = 2 ] || { ls "$work/separate/dist"; fail "share_stable_abi = false: not two wheels"; }
grep -q "served by" "$work/separate.log" && fail "share_stable_abi = false: a cell was served"
echo "OK: torch==2.14.* (C++ ABI, refused for 2.15), torch>=2.12 (stable ABI, its floor), none (no torch), none (torch_pin = false), one stable-ABI wheel for torch 2.14 and 2.15"
