#!/usr/bin/env bash
# A project whose setup.py hardcodes its own GPU architectures (as causal-conv1d, mamba-ssm and
# flash-attention do), built through the command backend with torch 2.14 (CUDA 13.0, the machine's
# toolkit exactly): with [arch] list = "9.0" the wheel holds sm_90 code only, the build says what the
# project asked for, and the record keeps both; with [arch] enforce = false the project's own list
# is compiled. [build.env] reaches setup.py and is recorded; a setup.py that opens a URL is named in
# the build's output.
# usage: arch_enforce.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
opforge=$(realpath "$1") src=$2 work=$(realpath -m "$3")
. "$src/tests/e2e/lib.sh"
venv=${OPFORGE_TORCH214_VENV:-$HOME/.cache/opforge/torch214-venv}
if [ ! -x "$venv/bin/python" ]; then
  msg="the torch 2.14 environment ($venv) is missing: run scripts/torch-venv"
  [ "${CI:-}" = "true" ] && fail "$msg"
  echo "SKIP: $msg"; exit 77
fi
need_cuda130
rm -rf "$work" && mkdir -p "$work"
cp -r "$src/tests/fixtures/cuda_extension" "$work/proj"
# ccache: the second build compiles scale.cpp again (its nvcc wrapper, and so its .cu, differ).
sed -i 's/^backend = "command"/backend = "command"\ncache = "ccache"/' "$work/proj/opforge.toml"
# The project's own list, in the spellings such setup.py files use, and a switch it reads.
cat > "$work/proj/setup.py" <<'PY'
import os
import urllib.request
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

flavour = os.environ.get("TINYSCALE_FLAVOUR", "plain")
with open("tinyscale/flavour.py", "w") as f:
    f.write("FLAVOUR = %r\n" % flavour)
if os.environ.get("TINYSCALE_FETCH") == "1":
    # as causal-conv1d's bdist_wheel does without CAUSAL_CONV1D_FORCE_BUILD=TRUE
    try:
        urllib.request.urlretrieve("http://127.0.0.1:9/tinyscale-prebuilt.whl", "prebuilt.whl")
    except OSError:
        print("Precompiled wheel not found. Building from source...")
nvcc = ["-O2", "-gencode", "arch=compute_75,code=sm_75", "-gencode=arch=compute_80,code=sm_80",
        "-arch=sm_86", "--generate-code=arch=compute_120,code=[sm_120,compute_120]"]
setup(
    name="tinyscale",
    version="0.2.0",
    packages=["tinyscale"],
    ext_modules=[CUDAExtension("tinyscale._C", ["csrc/scale.cpp", "csrc/scale_kernel.cu"],
                               extra_compile_args={"cxx": ["-O2"], "nvcc": nvcc})],
    cmdclass={"build_ext": BuildExtension},
)
PY
sed -i "s|^command = .*|command = [\"$venv/bin/python\", \"setup.py\", \"bdist_wheel\"]|" "$work/proj/opforge.toml"
cat >> "$work/proj/opforge.toml" <<TOML

[cuda]
version = "torch"
python = "$venv/bin/python"

[build.env]
TINYSCALE_FLAVOUR = "spicy"
TINYSCALE_FETCH = "1"
TOML
export OPFORGE_CACHE_DIR="$work/cache" CCACHE_DIR="$work/ccache"
unset CUDA_HOME CUDA_PATH DS_SKIP_CUDA_CHECK TORCH_CUDA_ARCH_LIST

(cd "$work/proj" && "$opforge" plan opforge.toml) > "$work/plan.log" 2>&1 || { cat "$work/plan.log"; fail "plan"; }
grep -q "the project's own -gencode/-arch options are replaced by these" "$work/plan.log" \
  || { cat "$work/plan.log"; fail "plan does not say the arch list is enforced"; }
grep -q "TINYSCALE_FLAVOUR=spicy" "$work/plan.log" || { cat "$work/plan.log"; fail "plan does not show [build.env]"; }

t0=$(date +%s)
(cd "$work/proj" && "$opforge" build opforge.toml) > "$work/build1.log" 2>&1 || { tail -40 "$work/build1.log"; fail "build (enforced)"; }
echo "enforced build: $(( $(date +%s) - t0 )) s"
grep -qx "GPU code: sm_90; the project asked for sm_75 sm_80 sm_86 sm_120 compute_86 compute_120 (6), replaced by the plan's 9.0 (\[arch\] enforce = false keeps the project's)" "$work/build1.log" \
  || { grep -n "GPU code" "$work/build1.log"; fail "the build does not say what the project asked for and what was compiled"; }
grep -q "^opforge: network: GET http://127.0.0.1:9/tinyscale-prebuilt.whl (the build reached the network" "$work/build1.log" \
  || { cat "$work/build1.log"; fail "the setup.py's download is not named"; }
wheel=$(only_wheel "$work/proj/dist")
[ -n "$wheel" ] || fail "no wheel"
"$opforge" inspect --json "$wheel" > "$work/inspect1.json" || fail "inspect"
python3 - "$work/inspect1.json" "$wheel.opforge-record.json" <<'PY' || fail "GPU code or record"
import json, sys
j = json.load(open(sys.argv[1]))
names = sorted({i["name"] for f in j["files"] if "elf" in f for i in f["elf"]["fatbin"]})
assert names == ["sm_90"], names
assert j["computed_python_abi"].startswith("cp3"), j["computed_python_abi"]
assert "is a CPython extension for CPython" in j["python_abi_reason"], j["python_abi_reason"]
assert "linked against torch's libraries" in j["python_abi_reason"], j["python_abi_reason"]
r = json.load(open(sys.argv[2]))["inputs"]
assert r["arch"] == {"list": "9.0", "enforced": True, "compiled": ["sm_90"],
                     "project_asked": ["sm_75", "sm_80", "sm_86", "sm_120", "compute_86", "compute_120"]}, r["arch"]
assert r["build_env"] == {"TINYSCALE_FETCH": "1", "TINYSCALE_FLAVOUR": "spicy"}, r["build_env"]
PY
mkdir -p "$work/site" && (cd "$work/site" && python3 -m zipfile -e "$wheel" .)
PYTHONPATH="$work/site" "$venv/bin/python" -c "
import torch, tinyscale, tinyscale.flavour
assert tinyscale.flavour.FLAVOUR == 'spicy', tinyscale.flavour.FLAVOUR
assert torch.equal(tinyscale.scale(torch.arange(4.), 2.0), torch.arange(4.) * 2)
" || fail "the built extension does not import or run"

# [arch] enforce = false: the project's own list (torch adds none of TORCH_CUDA_ARCH_LIST's when the
# project passes its own).
sed -i 's/^list = "9.0"/list = "9.0"\nenforce = false/' "$work/proj/opforge.toml"
rm -rf "$work/proj/dist"
(cd "$work/proj" && "$opforge" build opforge.toml) > "$work/build2.log" 2>&1 || { tail -40 "$work/build2.log"; fail "build (kept)"; }
grep -qx "GPU code: sm_75 sm_80 sm_86 sm_120 compute_86 compute_120; the project's own list sm_75 sm_80 sm_86 sm_120 compute_86 compute_120 (\[arch\] enforce = false)" "$work/build2.log" \
  || { grep -n "GPU code" "$work/build2.log"; fail "enforce = false: GPU code line"; }
echo "OK"
