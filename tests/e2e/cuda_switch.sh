#!/usr/bin/env bash
# A project that compiles its CUDA extension only when told to (FORCE_CUDA=1, as pytorch3d's
# setup.py does when no GPU is visible), built through the command backend with torch 2.14 (CUDA
# 13.0, the machine's toolkit) for [arch] list = "9.0":
#   - without the switch: plan warns naming it; the build fails (exit 1), saying the wheel holds no
#     GPU code, naming FORCE_CUDA and its line, and nothing lands in dist/ (the wheel is kept aside);
#   - with [build.env] FORCE_CUDA = "1": the wheel holds sm_90 only;
#   - with [arch] list = "none": a CPU-only wheel on purpose, exit 0, labelled cpu.
# usage: cuda_switch.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
opforge=$(realpath "$1") src=$2 work=$(realpath -m "$3")
. "$src/tests/e2e/lib.sh"
venv=${OPFORGE_TORCH214_VENV:-$HOME/.cache/opforge/torch214-venv}
need_venv "$venv"
need_cuda130
rm -rf "$work" && mkdir -p "$work"
cp -r "$src/tests/fixtures/cuda_extension" "$work/proj"
# The CPU build's stand-ins for what the .cu file defines.
cat > "$work/proj/csrc/cpu_only.cpp" <<'CPP'
#include <cstdint>
#include <stdexcept>
void scale_launch(const float*, float*, float, int64_t) { throw std::runtime_error("built without CUDA"); }
int cuda_runtime_version() { return 0; }
CPP
cat > "$work/proj/setup.py" <<'PY'
import os
import torch
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension

force_cuda = os.getenv("FORCE_CUDA", "0") == "1"
if torch.cuda.is_available() or force_cuda:
    ext = CUDAExtension("tinyscale._C", ["csrc/scale.cpp", "csrc/scale_kernel.cu"])
else:
    ext = CppExtension("tinyscale._C", ["csrc/scale.cpp", "csrc/cpu_only.cpp"])
setup(name="tinyscale", version="0.2.0", packages=["tinyscale"], ext_modules=[ext],
      cmdclass={"build_ext": BuildExtension})
PY
sed -i "s|^command = .*|command = [\"$venv/bin/python\", \"setup.py\", \"bdist_wheel\"]\ncache = \"ccache\"|" "$work/proj/opforge.toml"
sed -i 's|^local_version = .*|local_version = "none"|' "$work/proj/opforge.toml"
cat >> "$work/proj/opforge.toml" <<TOML

[cuda]
version = "torch"
python = "$venv/bin/python"
TOML
export OPFORGE_CACHE_DIR="$work/cache" CCACHE_DIR="$work/ccache"
unset CUDA_HOME CUDA_PATH DS_SKIP_CUDA_CHECK TORCH_CUDA_ARCH_LIST FORCE_CUDA

# 1. No switch: warned at plan time, refused at build time.
(cd "$work/proj" && "$opforge" plan opforge.toml) > "$work/plan.log" 2>&1 || { cat "$work/plan.log"; fail "plan"; }
grep -q 'the project reads FORCE_CUDA (setup.py:6) and this build does not set it' "$work/plan.log" \
  || { cat "$work/plan.log"; fail "plan does not warn of the unset FORCE_CUDA"; }
rc=0
(cd "$work/proj" && "$opforge" build opforge.toml) > "$work/build1.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || { tail -30 "$work/build1.log"; fail "no switch: exit $rc, not 1"; }
grep -q "the wheel holds no GPU code, and the plan is sm_90 (arch list 9.0; the project has 1 CUDA source (csrc/scale_kernel.cu)): 1 library in the wheel, none with a fatbinary" "$work/build1.log" \
  || { tail -30 "$work/build1.log"; fail "no switch: the refusal does not say what is missing"; }
grep -q 'FORCE_CUDA, setup.py:6 (force_cuda = os.getenv("FORCE_CUDA", "0") == "1"): \[build.env\] FORCE_CUDA = "1"' "$work/build1.log" \
  || { tail -30 "$work/build1.log"; fail "no switch: FORCE_CUDA is not named with its line and the fix"; }
[ -z "$(only_wheel "$work/proj/dist")" ] || fail "no switch: a wheel landed in dist/"
kept=$(ls "$work"/proj/build/opforge/normalized/*.whl 2>/dev/null | head -n 1)
[ -n "$kept" ] || fail "no switch: the refused wheel was not kept aside"
grep -q "the refused wheel: $kept" "$work/build1.log" || fail "no switch: the kept wheel is not named"

# 2. With the switch: sm_90 only.
cat >> "$work/proj/opforge.toml" <<'TOML'

[build.env]
FORCE_CUDA = "1"
TOML
(cd "$work/proj" && "$opforge" build opforge.toml) > "$work/build2.log" 2>&1 || { tail -40 "$work/build2.log"; fail "FORCE_CUDA=1 build"; }
grep -qx "GPU code: sm_90 (the project asked for the same)" "$work/build2.log" || { grep -n "GPU code" "$work/build2.log"; fail "FORCE_CUDA=1: GPU code line"; }
wheel=$(only_wheel "$work/proj/dist")
"$opforge" inspect --json "$wheel" > "$work/inspect2.json" || fail "inspect"
python3 - "$work/inspect2.json" <<'PY' || fail "FORCE_CUDA=1: not sm_90 only"
import json, sys
j = json.load(open(sys.argv[1]))
names = sorted({i["name"] for f in j["files"] if "elf" in f for i in f["elf"]["fatbin"]})
assert names == ["sm_90"], names
PY

# 3. A CPU-only wheel on purpose.
sed -i '/^\[build.env\]/,$d' "$work/proj/opforge.toml"
sed -i 's/^list = "9.0"/list = "none"/' "$work/proj/opforge.toml"
rm -rf "$work/proj/dist"
(cd "$work/proj" && "$opforge" build opforge.toml) > "$work/build3.log" 2>&1 || { tail -40 "$work/build3.log"; fail "[arch] list = none build"; }
wheel=$(only_wheel "$work/proj/dist")
[ -n "$wheel" ] || fail "[arch] list = none: no wheel"
"$opforge" inspect --json "$wheel" > "$work/inspect3.json" || fail "inspect"
python3 - "$work/inspect3.json" <<'PY' || fail "[arch] list = none: GPU code in the wheel"
import json, sys
j = json.load(open(sys.argv[1]))
assert not any(f["elf"]["fatbin"] for f in j["files"] if "elf" in f), j["files"]
PY
mkdir -p "$work/site" && (cd "$work/site" && python3 -m zipfile -e "$wheel" .)
PYTHONPATH="$work/site" "$venv/bin/python" -c "
import torch, tinyscale
assert torch.equal(tinyscale.scale(torch.arange(4.), 2.0), torch.arange(4.) * 2)
assert tinyscale.cuda_version() == 0
" || fail "the CPU-only extension does not import or run"
echo "OK"
