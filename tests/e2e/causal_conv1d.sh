#!/usr/bin/env bash
# causal-conv1d 1.7.0 from its PyPI sdist, built as docs/external-projects.md's recipe says, for one
# architecture, with torch 2.14 (CUDA 13.0, the machine's toolkit exactly): the wheel holds sm_90
# code only, the summary names the project's nine, the record keeps both and the switch, the
# extension imports with the environment's torch, inspect explains its tag, and a second build of
# a copy in another folder gives the same bytes. The second build's compiles are ccache hits (one
# arch still takes minutes; CompileCommandBackend.NvccWrapperSeedsEachObject compiles twice for
# real); OPFORGE_E2E_NO_CCACHE=1 compiles both for real.
# usage: causal_conv1d.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
opforge=$(realpath "$1") src=$2 work=$(realpath -m "$3")
. "$src/tests/e2e/lib.sh"
venv=${OPFORGE_TORCH214_VENV:-$HOME/.cache/opforge/torch214-venv}
if [ ! -x "$venv/bin/python" ]; then
  msg="the torch 2.14 environment ($venv) is missing: run scripts/torch-venv"
  [ "${CI:-}" = "true" ] && fail "$msg"
  echo "SKIP: $msg"; exit 77
fi
sdist=$("$src/tests/e2e/fetch_sdist.sh" causal-conv1d 1.7.0) || fail "cannot fetch causal-conv1d's sdist"
rm -rf "$work" && mkdir -p "$work/a" "$work/b"
recipe() {
  cat > "$1/causal-conv1d.toml" <<TOML
[package]
name = "causal-conv1d"
version = "1.7.0"
local_version = "cu{cuda_major}{cuda_minor}torch{torch_major}{torch_minor}"

[source]
path = "causal_conv1d-1.7.0"

[cuda]
version = "torch"
python = "$venv/bin/python"

[arch]
list = "9.0"

[build]
backend = "command"
command = ["$venv/bin/python", "setup.py", "bdist_wheel"]
cache = "$cache"

[build.env]
CAUSAL_CONV1D_FORCE_BUILD = "TRUE"
TOML
}
unset CUDA_HOME CUDA_PATH DS_SKIP_CUDA_CHECK TORCH_CUDA_ARCH_LIST MAX_JOBS
export OPFORGE_CACHE_DIR="$work/cache" CCACHE_DIR="$work/ccache"
cache=ccache
[ "${OPFORGE_E2E_NO_CCACHE:-}" = "1" ] && cache=none
for d in a b; do tar -xzf "$sdist" -C "$work/$d"; recipe "$work/$d"; done

t0=$(date +%s)
(cd "$work/a" && "$opforge" build causal-conv1d.toml) > "$work/a.log" 2>&1 || { tail -40 "$work/a.log"; fail "build"; }
echo "build: $(( $(date +%s) - t0 )) s"
grep -qx "GPU code: sm_90; the project asked for sm_75 sm_80 sm_87 sm_90 sm_100 sm_103 sm_110 sm_120 sm_121 (9), replaced by the plan's 9.0 (\[arch\] enforce = false keeps the project's)" "$work/a.log" \
  || { grep -n "GPU code" "$work/a.log"; fail "the summary does not name the project's nine and the one compiled"; }
grep -q "opforge: network:" "$work/a.log" && fail "a forced build reached the network"
wheel=$(only_wheel "$work/a/dist")
[ -n "$wheel" ] || fail "no wheel"
"$opforge" inspect "$wheel" > "$work/inspect.log" || fail "inspect"
"$opforge" inspect --json "$wheel" > "$work/inspect.json" || fail "inspect --json"
python3 - "$work/inspect.json" "$wheel.opforge-record.json" <<'PY' || { cat "$work/inspect.log"; fail "inspect or record"; }
import json, sys
j = json.load(open(sys.argv[1]))
names = sorted({i["name"] for f in j["files"] if "elf" in f for i in f["elf"]["fatbin"]})
assert names == ["sm_90"], names
abi = j["computed_python_abi"]
assert abi.startswith("cp3") and abi.split("-")[0] == abi.split("-")[1], abi
why = j["python_abi_reason"]
assert why.startswith("causal_conv1d_cuda.cpython-3"), why
assert "is a CPython extension for CPython 3." in why and "linked against torch's libraries" in why, why
r = json.load(open(sys.argv[2]))["inputs"]
assert r["arch"]["compiled"] == ["sm_90"] and r["arch"]["enforced"] is True, r["arch"]
assert len(r["arch"]["project_asked"]) == 9, r["arch"]
assert r["build_env"] == {"CAUSAL_CONV1D_FORCE_BUILD": "TRUE"}, r.get("build_env")
PY
mkdir -p "$work/site" && (cd "$work/site" && python3 -m zipfile -e "$wheel" .)
PYTHONPATH="$work/site" "$venv/bin/python" -c "
import torch, causal_conv1d_cuda, causal_conv1d
assert hasattr(causal_conv1d_cuda, 'causal_conv1d_fwd'), dir(causal_conv1d_cuda)
print('imports with torch', torch.__version__)
" || fail "the wheel's extension does not import with the environment's torch"

t0=$(date +%s)
(cd "$work/b" && "$opforge" build causal-conv1d.toml) > "$work/b.log" 2>&1 || { tail -40 "$work/b.log"; fail "second build"; }
echo "second build (another folder): $(( $(date +%s) - t0 )) s"
cmp "$wheel" "$(only_wheel "$work/b/dist")" || fail "two folders gave different wheels"
echo "OK"
