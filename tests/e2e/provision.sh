#!/usr/bin/env bash
# [cuda] provision = "pypi", end to end: PyPI's torch 2.15 (CUDA 13.2; scripts/torch-venv) and a
# small torch CUDAExtension (tests/fixtures/cuda_extension) on a machine whose only toolkit is
# another CUDA. `plan` fetches nothing; the build installs NVIDIA's CUDA 13.2 wheels into the
# cache, builds with exactly that toolkit (no DS_SKIP_CUDA_CHECK), the wheel holds sm_90 code and
# its CPU path runs; a second build with a dead index fetches nothing (the folder and the record's
# package hashes unchanged); with a dead index and an empty cache the build exits 3 naming the
# packages and leaves no folder behind.
# usage: provision.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
opforge=$(realpath "$1") src=$2 work=$(realpath -m "$3")
. "$src/tests/e2e/lib.sh"
venv=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
if [ ! -x "$venv/bin/python" ]; then
  msg="the PyPI torch environment ($venv) is missing: run scripts/torch-venv"
  [ "${CI:-}" = "true" ] && fail "$msg"
  echo "SKIP: $msg"; exit 77
fi
rm -rf "$work" && mkdir -p "$work"
cp -r "$src/tests/fixtures/cuda_extension" "$work/proj"
# ccache: the second build compiles the same sources again (the scratch tree is fresh).
sed -i 's/^backend = "command"/backend = "command"\ncache = "ccache"/' "$work/proj/opforge.toml"
cat >> "$work/proj/opforge.toml" <<'TOML'

[cuda]
version = "torch"
python = "python"
provision = "pypi"
TOML
export PATH="$venv/bin:$PATH" OPFORGE_CACHE_DIR="$work/cache" CCACHE_DIR="$work/ccache"
unset CUDA_HOME CUDA_PATH DS_SKIP_CUDA_CHECK
tk="$work/cache/toolkits/13.2"
dead=http://127.0.0.1:9/simple   # the discard port: nothing listens there

# plan says what it would fetch, and fetches nothing.
(cd "$work/proj" && "$opforge" plan opforge.toml) > "$work/plan.log" 2>&1 || { cat "$work/plan.log"; fail "plan"; }
grep -q "installs cuda-toolkit\[nvcc,cudart,cccl\]==13.2.2" "$work/plan.log" || { cat "$work/plan.log"; fail "plan does not say what it would fetch"; }
[ ! -e "$tk" ] || fail "plan made $tk"

t0=$(date +%s)
(cd "$work/proj" && "$opforge" build opforge.toml) > "$work/build1.log" 2>&1 || { tail -40 "$work/build1.log"; fail "first build"; }
echo "first build (provisioning included): $(( $(date +%s) - t0 )) s"
wheel=$(only_wheel "$work/proj/dist")
[ -n "$wheel" ] || fail "no wheel"
rec="$wheel.opforge-record.json"
python3 - "$rec" <<'PY' || fail "the record does not name the provisioned toolkit"
import json, sys
r = json.load(open(sys.argv[1]))["inputs"]
tk = r["toolkit"]
assert tk["version"] == "13.2", tk
assert tk["root"].endswith("/toolkits/13.2"), tk["root"]
p = tk["provisioned"]
assert p["requirement"] == "cuda-toolkit[nvcc,cudart,cccl]==13.2.2", p
names = {k["name"]: k for k in p["packages"]}
for n in ("nvidia-cuda-nvcc", "nvidia-nvvm", "nvidia-cuda-crt", "nvidia-cuda-runtime", "nvidia-cuda-cccl"):
    assert n in names and len(names[n]["sha256"]) == 64, (n, names.keys())
assert names["nvidia-cuda-nvcc"]["version"].startswith("13.2."), names["nvidia-cuda-nvcc"]
env = r.get("command_environment", {})
assert "DS_SKIP_CUDA_CHECK" not in env, env
# The command saw the provisioned toolkit through its view (bin/nvcc the wrapper).
import os
home = env.get("CUDA_HOME", "")
assert "/toolkit-view/" in home, home
assert os.path.realpath(os.path.join(home, "include")) == os.path.realpath(os.path.join(tk["root"], "include")), home
assert "/nvcc/" in os.readlink(os.path.join(home, "bin", "nvcc")), home
PY
grep -q "warning:.*minor" "$work/build1.log" && fail "the build warned of a CUDA mismatch"
"$opforge" inspect "$wheel" > "$work/inspect.log" 2>&1 || { cat "$work/inspect.log"; fail "inspect"; }
grep -q "sm_90" "$work/inspect.log" || { cat "$work/inspect.log"; fail "inspect shows no sm_90 code"; }
"$tk/bin/nvcc" --version | grep -q "release 13.2" || fail "the provisioned nvcc is not 13.2"
# The wheel's CPU path runs with torch 2.15.
mkdir -p "$work/site" && (cd "$work/site" && python3 -m zipfile -e "$wheel" .)
PYTHONPATH="$work/site" "$venv/bin/python" -c "
import torch, tinyscale
assert tinyscale.cuda_version() == 13020, tinyscale.cuda_version()
assert torch.equal(tinyscale.scale(torch.arange(4.), 2.0), torch.arange(4.) * 2)
" || fail "the built extension does not run"

# (the folder's own time is left out: each use rewrites its last-use file)
snapshot() { (cd "$tk" && find . -mindepth 1 ! -name .opforge-last-use -printf '%p %y %s %T@ %l\n' | sort | sha256sum); }
before=$(snapshot)
hashes() { python3 -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))['inputs']['toolkit']['provisioned'], sort_keys=True))" "$1"; }
h1=$(hashes "$rec")
touch "$work/proj/csrc/scale.cpp"
(cd "$work/proj" && PIP_INDEX_URL=$dead PIP_RETRIES=0 "$opforge" build opforge.toml) > "$work/build2.log" 2>&1 \
  || { tail -40 "$work/build2.log"; fail "second build (dead index: it must not need the network)"; }
grep -q "provisioning CUDA" "$work/build2.log" && fail "the second build provisioned again"
[ "$(snapshot)" = "$before" ] || fail "the second build changed $tk"
[ "$(hashes "$(only_wheel "$work/proj/dist").opforge-record.json")" = "$h1" ] || fail "the record's package hashes changed"

# No network, nothing cached: exit 3 naming the packages, no folder left.
set +e
(cd "$work/proj" && OPFORGE_CACHE_DIR="$work/cache-dead" PIP_INDEX_URL=$dead PIP_RETRIES=0 PIP_NO_CACHE_DIR=1 \
  "$opforge" build opforge.toml) > "$work/dead.log" 2>&1
rc=$?
set -e
[ $rc -eq 3 ] || { cat "$work/dead.log"; fail "dead index: exit $rc, expected 3"; }
grep -q "nvidia-cuda-nvcc" "$work/dead.log" || { cat "$work/dead.log"; fail "dead index: the message does not name the packages"; }
[ -z "$(ls -A "$work/cache-dead/toolkits" 2>/dev/null | grep -v '\.lock$')" ] || fail "dead index left $(ls -A "$work/cache-dead/toolkits")"
echo "OK"
