#!/usr/bin/env bash
# A project built by torch's setuptools path (BuildExtension with use_ninja=False), which starts
# $CUDA_HOME/bin/nvcc itself and never reads PYTORCH_NVCC, and passes its own -gencode for sm_80,
# built for [arch] list = "9.0" with torch 2.14 (CUDA 13.0, the machine's toolkit):
#   - its nvcc runs through opforge's wrapper (CUDA_HOME names the toolkit view): the wheel holds
#     sm_90 only, the record says what the project asked for, nvcc warns of no second -ccbin;
#   - the summary says the compiles ran one at a time, though two were allowed;
#   - the same project in another folder gives the same wheel bytes;
#   - a setup.py that runs the toolkit's nvcc by its absolute path escapes the wrapper: the
#     summary and the record name that compile.
# usage: no_ninja.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
opforge=$(realpath "$1") src=$2 work=$(realpath -m "$3")
. "$src/tests/e2e/lib.sh"
venv=${OPFORGE_TORCH214_VENV:-$HOME/.cache/opforge/torch214-venv}
need_venv "$venv"
need_cuda130
rm -rf "$work" && mkdir -p "$work"
make_project() {  # make_project DIR [PRE-STEP]: the fixture with setuptools' own compile path
  mkdir -p "$(dirname "$1")" && cp -r "$src/tests/fixtures/cuda_extension" "$1"
  cat > "$1/setup.py" <<PY
import subprocess
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension
$2
setup(
    name="tinyscale",
    version="0.2.0",
    packages=["tinyscale"],
    ext_modules=[CUDAExtension("tinyscale._C", ["csrc/scale.cpp", "csrc/scale_kernel.cu"],
                               extra_compile_args={"cxx": ["-O2"],
                                                   "nvcc": ["-O2", "-gencode", "arch=compute_80,code=sm_80"]})],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=False)},
)
PY
  sed -i "s|^command = .*|command = [\"$venv/bin/python\", \"setup.py\", \"bdist_wheel\"]\njobs = 2|" "$1/opforge.toml"
  printf '\n[cuda]\nversion = "torch"\npython = "%s"\n' "$venv/bin/python" >> "$1/opforge.toml"
}
export OPFORGE_CACHE_DIR="$work/cache"
unset CUDA_HOME CUDA_PATH DS_SKIP_CUDA_CHECK TORCH_CUDA_ARCH_LIST

make_project "$work/a" ""
(cd "$work/a" && "$opforge" build opforge.toml) > "$work/a.log" 2>&1 || { tail -40 "$work/a.log"; fail "build a"; }
grep -qx "GPU code: sm_90; the project asked for sm_80 (1), replaced by the plan's 9.0 (\[arch\] enforce = false keeps the project's)" "$work/a.log" \
  || { grep -n -A2 "GPU code" "$work/a.log"; fail "a: the project's nvcc did not go through the wrapper"; }
grep -q "without opforge's wrapper" "$work/a.log" && { grep -n "wrapper" "$work/a.log"; fail "a: a compile said to escape"; }
grep -q "compiler-bindir" "$work/a/build/opforge/command.log" && fail "a: nvcc saw two -ccbin"
grep -q "^memory: 2 compile steps, 1 at once (2 allowed); " "$work/a.log" \
  || { grep -n -A1 "^memory" "$work/a.log"; fail "a: the summary does not say the compiles ran one at a time"; }
grep -q "^  the project compiled one file at a time, whatever MAX_JOBS says" "$work/a.log" || fail "a: no word of the serial compiles"
wheel_a=$(only_wheel "$work/a/dist")
python3 - "$wheel_a.opforge-record.json" <<'PY' || fail "a: record"
import json, sys
r = json.load(open(sys.argv[1]))["inputs"]["arch"]
assert r["compiled"] == ["sm_90"] and r["project_asked"] == ["sm_80"], r
assert "unwrapped_compiles" not in r, r
PY

# Another folder, the same bytes.
make_project "$work/deeper/b" ""
(cd "$work/deeper/b" && "$opforge" build opforge.toml) > "$work/b.log" 2>&1 || { tail -40 "$work/b.log"; fail "build b"; }
wheel_b=$(only_wheel "$work/deeper/b/dist")
cmp "$wheel_a" "$wheel_b" || fail "two folders gave different wheels: $wheel_a $wheel_b"

# An nvcc started by the toolkit's absolute path: said, and recorded.
make_project "$work/c" 'subprocess.check_call(["/usr/local/cuda-13.0/bin/nvcc", "-c", "csrc/scale_kernel.cu", "-o", "own.o", "-gencode", "arch=compute_90,code=sm_90"])'
(cd "$work/c" && "$opforge" build opforge.toml) > "$work/c.log" 2>&1 || { tail -40 "$work/c.log"; fail "build c"; }
grep -q "^  warning: 1 CUDA compile ran nvcc without opforge's wrapper (csrc/scale_kernel.cu): what it asked nvcc for is not known" "$work/c.log" \
  || { grep -n -A3 "GPU code" "$work/c.log"; fail "c: the escaped compile is not named"; }
python3 - "$(only_wheel "$work/c/dist").opforge-record.json" <<'PY' || fail "c: record"
import json, sys
r = json.load(open(sys.argv[1]))["inputs"]["arch"]
assert r["unwrapped_compiles"] == ["csrc/scale_kernel.cu"], r
PY
echo "OK"
