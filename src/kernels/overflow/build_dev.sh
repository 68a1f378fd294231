#!/bin/sh
# Development build of libopforge_overflow.so (and the compiled hook) by hand, for a machine that cannot run opforge.
# usage: build_dev.sh OUTDIR [ARCHS]   (ARCHS like "80 90"; default "80 90")
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build_dev.sh OUTDIR [ARCHS]}
archs=${2:-"80 90"}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
mkdir -p "$out/obj"
g++ -std=c++17 -O2 -fPIC -fvisibility=hidden -c "$here/stats_cpu.cpp" -o "$out/obj/stats_cpu.o"
gencode=""
for a in $archs; do gencode="$gencode -gencode arch=compute_$a,code=sm_$a"; done
for f in stats test_kernels; do
  "$nvcc" -std=c++17 -O2 -Xcompiler -fPIC,-fvisibility=hidden $gencode -c "$here/$f.cu" -o "$out/obj/$f.o"
done
"$nvcc" -shared -cudart static $gencode "$out/obj/stats_cpu.o" "$out/obj/stats.o" "$out/obj/test_kernels.o" \
  -o "$out/libopforge_overflow.so"
echo "$out/libopforge_overflow.so"
# The compiled hook (op.toml [python_extension]), when this Python has its headers; without it the
# Python hook does the same work.
inc=$(${PYTHON:-python3} -c "import sysconfig; print(sysconfig.get_path('include'))" 2>/dev/null || true)
if [ -n "$inc" ] && [ -f "$inc/Python.h" ]; then
  gcc -O2 -fPIC -fvisibility=hidden -shared -DPy_LIMITED_API=0x03080000 -I"$inc" "$here/hooks.c" \
    -o "$out/_overflow_hooks.abi3.so"
  echo "$out/_overflow_hooks.abi3.so"
else
  echo "no Python.h for ${PYTHON:-python3}: _overflow_hooks.abi3.so not built (the Python hook does its work)"
fi
