#!/usr/bin/env bash
# Every op that can be built is built: a DeepSpeed-shaped tree (tests/fixtures/every_op_deepspeed,
# compiled for real by its setup.py with Debian's python3 and the installed nvcc) with a good CUDA
# op, a good CPU op, an op whose extension construction imports a module that is not installed
# (dskernels) and an op whose .cu does not compile.
#   DS_BUILD_OPS=1          → a wheel with the two good ops; the summary names the other two with
#                             their reasons; it installs and the tree's ds_report loads exactly them;
#                             the record agrees; the same bytes as a build asking for the two ops
#   DS_BUILD_BROKEN_CUDA=1  → exit 1 naming the op and its first compiler error
#   DS_BUILD_NEEDS_KERNELS=1 → exit 3 before anything compiles, with the package to install
# usage: every_op.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
opforge=$(realpath "$1") src=$(realpath "$2") work=$3
. "$src/tests/e2e/lib.sh"
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$cuda/bin/nvcc" ] || [ ! -x /usr/bin/python3 ]; then
  msg="no nvcc in $cuda/bin or no /usr/bin/python3: run scripts/deps"
  [ "${CI:-}" = "true" ] && fail "$msg"
  echo "SKIP: $msg"; exit 77
fi
rm -rf "$work"; mkdir -p "$work"; work=$(realpath "$work")
every_op_recipe "$work/deepspeed.toml" "$src"
run() {  # run NAME VAR=VALUE...: opforge build in a clean environment; output in NAME.log, exit in $rc
  local name=$1; shift
  set +e
  (cd "$work" && env -i PATH=/usr/bin:/bin HOME="$work/home" OPFORGE_CACHE_DIR="$work/cache" CUDA_HOME="$cuda" \
    SOURCE_DATE_EPOCH=1700000000 "$@" "$opforge" build --dist-dir "dist-$name" deepspeed.toml) > "$work/$name.log" 2>&1
  rc=$?
  set -e
}
has() { grep -qF -- "$2" "$work/$1.log" || { cat "$work/$1.log"; fail "$1: no line with: $2"; }; }

run all DS_BUILD_OPS=1
[ "$rc" = 0 ] || { cat "$work/all.log"; fail "DS_BUILD_OPS=1: exit $rc"; }
has all "built          good_cpu"
has all "built          good_cuda"
has all "failed         broken_cuda"
has all 'csrc/broken_cuda/broken_cuda_kernel.cu:5: error: template parameter "q_exponent_bits" may not be redeclared'
has all "skipped        needs_kernels"
has all "ModuleNotFoundError: No module named 'dskernels'"
has all "pip install deepspeed-kernels"
wheel=$(only_wheel "$work/dist-all")
[ -n "$wheel" ] || fail "no wheel in dist-all"
sos=$(unzip -Z1 "$wheel" | grep '\.so$' | sed 's|.*/||; s|\..*||' | sort | tr '\n' ' ')
[ "$sos" = "good_cpu_op good_cuda_op " ] || fail "the wheel's libraries are '$sos'"
/usr/bin/python3 - "$wheel.opforge-record.json" <<'PY' || fail "the record disagrees"
import json, sys
r = json.load(open(sys.argv[1]))["inputs"]
assert r["ops_installed"] == ["good_cpu", "good_cuda"], r["ops_installed"]
status = {l["op"]: l["status"] for l in r["op_summary"]}
assert status == {"broken_cuda": "failed", "good_cpu": "built", "good_cuda": "built",
                  "needs_kernels": "skipped"}, status
assert r["command_environment"]["DS_BUILD_BROKEN_CUDA"] == "0"
PY
# Installed, the tree's ds_report loads exactly the two good ops.
/usr/bin/python3 -m pip install --quiet --no-deps --no-index --target "$work/site" "$wheel"
report=$(cd "$work" && PYTHONPATH="$work/site" /usr/bin/python3 -m deepspeed.env_report)
[ "$report" = "good_cpu [INSTALLED] [OKAY] value=42
good_cuda [INSTALLED] [OKAY] value=256" ] || fail "ds_report says: $report"

# The same op set asked for by name: the same wheel bytes.
run two DS_BUILD_GOOD_CPU=1 DS_BUILD_GOOD_CUDA=1
[ "$rc" = 0 ] || { cat "$work/two.log"; fail "two ops: exit $rc"; }
cmp "$wheel" "$(only_wheel "$work/dist-two")" || fail "the same ops gave different wheel bytes"

run broken DS_BUILD_BROKEN_CUDA=1
[ "$rc" = 1 ] || { cat "$work/broken.log"; fail "DS_BUILD_BROKEN_CUDA=1: exit $rc, not 1"; }
has broken "op 'broken_cuda' (requested by DS_BUILD_BROKEN_CUDA=1) failed to compile:"
has broken 'broken_cuda_kernel.cu:5: error: template parameter "q_exponent_bits"'
has broken "broken_cuda.log"
! grep -q "Traceback" "$work/broken.log" || fail "a traceback reached the user"

run kernels DS_BUILD_NEEDS_KERNELS=1
[ "$rc" = 3 ] || { cat "$work/kernels.log"; fail "DS_BUILD_NEEDS_KERNELS=1: exit $rc, not 3"; }
has kernels "op 'needs_kernels' was requested (DS_BUILD_NEEDS_KERNELS=1) but cannot be built"
has kernels "pip install deepspeed-kernels"
! grep -q "compiling op" "$work/kernels.log" || fail "something compiled before exit 3"
echo "every_op: ok"
