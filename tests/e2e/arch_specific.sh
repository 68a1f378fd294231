#!/usr/bin/env bash
# A project that asks nvcc for sm_90a itself (tests/fixtures/arch_specific: _hopper's .cu #errors
# for any other target; _plain takes the plan's), built through the command backend with torch
# 2.14 and CUDA 13.0:
#   [arch] list = "9.0": it builds; _hopper holds sm_90a, _plain sm_90; the summary and the record
#     say so per library;
#   [arch] list = "8.0": the build stops before nvcc compiles hopper.cu, naming the file, what it
#     asked for and the entry to add (9.0a).
# usage: arch_specific.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
opforge=$(realpath "$1") src=$2 work=$(realpath -m "$3")
. "$src/tests/e2e/lib.sh"
venv=${OPFORGE_TORCH214_VENV:-$HOME/.cache/opforge/torch214-venv}
need_venv "$venv"
need_cuda130
rm -rf "$work" && mkdir -p "$work"
cp -r "$src/tests/fixtures/arch_specific" "$work/proj"
sed -i "s|^command = .*|command = [\"$venv/bin/python\", \"setup.py\", \"bdist_wheel\"]|" "$work/proj/opforge.toml"
printf '\n[cuda]\nversion = "torch"\npython = "%s"\n' "$venv/bin/python" >>"$work/proj/opforge.toml"
export OPFORGE_CACHE_DIR="$work/cache" SOURCE_DATE_EPOCH=1700000000
unset CUDA_HOME CUDA_PATH TORCH_CUDA_ARCH_LIST MAX_JOBS

(cd "$work/proj" && "$opforge" build opforge.toml) >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; fail "build (9.0)"; }
grep -A2 "^GPU code" "$work/build.log"
grep -qx "GPU code: sm_90 sm_90a (the project asked for the same)" "$work/build.log" ||
  { grep -n -A2 "GPU code" "$work/build.log"; fail "the GPU code line"; }
grep -qx "  archfix/_hopper.cpython-311-x86_64-linux-gnu.so: sm_90a" "$work/build.log" || fail "no per-library line for _hopper"
grep -qx "  archfix/_plain.cpython-311-x86_64-linux-gnu.so: sm_90" "$work/build.log" || fail "no per-library line for _plain"
wheel=$(only_wheel "$work/proj/dist")
"$opforge" inspect --json "$wheel" >"$work/inspect.json" || fail "inspect"
python3 - "$work/inspect.json" "$wheel.opforge-record.json" <<'PY' || fail "inspect or record"
import json, sys
files = {f["path"]: sorted({i["name"] for i in f["elf"]["fatbin"]}) for f in json.load(open(sys.argv[1]))["files"]
         if "elf" in f and f["elf"]["fatbin"]}
assert files == {"archfix/_hopper.cpython-311-x86_64-linux-gnu.so": ["sm_90a"],
                 "archfix/_plain.cpython-311-x86_64-linux-gnu.so": ["sm_90"]}, files
arch = json.load(open(sys.argv[2]))["inputs"]["arch"]
assert arch["compiled_by_library"] == files, arch
print("per library:", files)
PY

# A plan without Hopper: hopper.cu stops before nvcc compiles it.
sed -i 's/^list = "9.0"/list = "8.0"/' "$work/proj/opforge.toml"
rm -rf "$work/proj/dist" "$work/proj/build"
if (cd "$work/proj" && "$opforge" build opforge.toml) >"$work/build80.log" 2>&1; then
  fail "the build for 8.0 alone compiled hopper.cu"
fi
grep -q "opforge: .*csrc/hopper.cu asks nvcc only for -gencode arch=compute_90a,code=sm_90a, GPUs that \[arch\] list does not have (it compiles sm_80): add 9.0a to \[arch\] list" "$work/build80.log" ||
  { tail -30 "$work/build80.log"; fail "the 8.0 build does not say why"; }
grep -q "needs sm_90a (Hopper's own features)" "$work/build80.log" && fail "nvcc ran on hopper.cu for sm_80"
echo "OK"
