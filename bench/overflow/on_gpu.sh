#!/usr/bin/env bash
# Everything the overflow op needs a GPU for, in one command for a GPU machine that has torch (and
# ideally transformers and pytest) but cannot build opforge itself (no apt, no internet): the wheel
# is built here with TORCH_CUDA_ARCH_LIST naming that GPU, carried over, unpacked and exercised.
#   here:  TORCH_CUDA_ARCH_LIST=9.0 ./build/opforge build recipes/default.toml --dist-dir dist-gpu
#   there: bash bench/overflow/on_gpu.sh dist-gpu/opforge_ops-*.whl "$OUT"
# With WHEEL = "dev" the op is compiled there with that machine's nvcc instead (build_dev.sh, for
# the GPU's own architecture): the way to go when its driver is older than the wheel's toolkit.
# Writes OUT/{nvidia-smi,selftest,pytest,gpu_bench,hook_bench}.txt (hook_bench: the whole-model hook
# overhead, plain / transformers / opforge default / opforge deferred=True / do-nothing hooks
# round-robin, on the GPU, then the CPU proxy of the per-hook bookkeeping; needs transformers);
# exits non-zero when a test fails.
set -uo pipefail
whl=${1:?usage: on_gpu.sh WHEEL OUTDIR} out=${2:?usage: on_gpu.sh WHEEL OUTDIR}
here=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
site=$(mktemp -d)
mkdir -p "$out"
if [ "$whl" = dev ]; then
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')
  sh "$here/src/kernels/overflow/build_dev.sh" "$site/lib" "$cc" > "$out/dev-build.txt" 2>&1 || exit 2
  export PYTHONPATH=$here/src/python OPFORGE_OPS_LIB_DIR=$site/lib
else
  "$py" -m zipfile -e "$whl" "$site" || exit 2
  export PYTHONPATH=$site
fi
export OPFORGE_TEST_DATA=$here/tests/data PYTHONDONTWRITEBYTECODE=1
status=0
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
"$py" - > "$out/selftest.txt" 2>&1 <<'PY' || status=1
import opforge_ops, opforge_ops.overflow as o, torch
print("opforge_ops", opforge_ops.__version__, "| torch", torch.__version__, "|",
      torch.cuda.get_device_name())
failures = o.selftest(verbose=True)
print("selftest:", "PASS" if not failures else "FAIL", *failures, sep="\n  ")
raise SystemExit(1 if failures else 0)
PY
if "$py" -c "import pytest" 2>/dev/null; then
  (cd "$here/tests/python" && "$py" -m pytest -q -rs -p no:cacheprovider test_overflow_gpu.py \
     test_overflow_numpy.py test_overflow_report.py test_overflow_inputs.py test_overflow_deferred.py \
     test_overflow_extension.py) > "$out/pytest.txt" 2>&1 || status=1
else
  echo "pytest is not installed here: GPU tests not run" > "$out/pytest.txt"
fi
"$py" "$here/bench/overflow/gpu_bench.py" > "$out/gpu_bench.txt" 2>&1 || status=1
"$py" "$here/bench/overflow/latency.py" >> "$out/gpu_bench.txt" 2>&1 || status=1
if "$py" -c "import transformers" 2>/dev/null; then
  # fp16 first (the issue's target); a random-weight T5 may overflow in fp16, then bf16 as well
  "$py" "$here/bench/overflow/hook_bench.py" --device cuda > "$out/hook_bench.txt" 2>&1 ||
    "$py" "$here/bench/overflow/hook_bench.py" --device cuda --dtype bfloat16 >> "$out/hook_bench.txt" 2>&1 ||
    status=1
  "$py" "$here/bench/overflow/hook_bench.py" --proxy >> "$out/hook_bench.txt" 2>&1 || status=1
else
  echo "transformers is not installed here: hook benchmark not run" > "$out/hook_bench.txt"
fi
tail -n 3 "$out"/selftest.txt "$out"/pytest.txt; cat "$out/gpu_bench.txt" "$out/hook_bench.txt"
exit $status
