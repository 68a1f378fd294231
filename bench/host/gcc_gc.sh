#!/usr/bin/env bash
# gcc's garbage-collection threshold ([build] gcc_gc_heap_mib) on real torch extension files,
# side by side in one run: DeepSpeed 0.19.8's C++ files compiled with the flags its builders and
# Python's CFLAGS give them (and -g0, as opforge's host wrappers add), once with gcc's default
# threshold and once with --param=ggc-min-heapsize=<KiB>, one after the other (run it on a quiet machine).
# Prints each file's CPU seconds (user + sys) and largest process, the ratio, and whether the two
# objects are the same bytes (they must be: the threshold decides when gcc frees memory, never
# what it compiles).
#   bench/host/gcc_gc.sh [KIB] [RESULTS_FILE]   (KIB: 1048576, opforge's default, 1 GiB)
set -euo pipefail
kib=${1:-1048576}; results=${2:-}
venv=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
sdist=${OPFORGE_SDIST_DIR:-$HOME/.cache/opforge/sdist}/deepspeed-0.19.8.tar.gz
[ -x "$venv/bin/python" ] && [ -f "$sdist" ] || { echo "run scripts/torch-venv first" >&2; exit 1; }
work=$(mktemp -d /tmp/opforge-bench-gcc-gc.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar -xzf "$sdist" -C "$work"
src=$work/deepspeed-0.19.8
torch=$("$venv/bin/python" -c 'import torch.utils.cpp_extension as c; print(" ".join("-I" + p for p in c.include_paths()))')
pyinc=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
cuda=${CUDA_HOME:-/usr/local/cuda}
# Python's CFLAGS as setuptools passes them (Debian's python3.11), then torch's and the op's (torch
# adds -std=c++20 when the op names no standard).
base="-Wsign-compare -DNDEBUG -g -fwrapv -O2 -Wall -g -fstack-protector-strong -Wformat -Werror=format-security -g -fwrapv -O2 -fPIC $torch -I$cuda/include -I$pyinc -DTORCH_API_INCLUDE_EXTENSION_H -D_GLIBCXX_USE_CXX11_ABI=1"
files=(
  "csrc/aio/py_lib/deepspeed_aio_op_desc.cpp|-Icsrc/aio/py_lib -Icsrc/aio/common -Icsrc/pin_memory -O3 -std=c++20 -g -Wno-reorder -march=native -fopenmp -D__AVX512__ -Wall -O0 -fPIC -DBF16_AVAILABLE -DTORCH_EXTENSION_NAME=async_io_op"
  "csrc/compile/z3.cpp|-Icsrc/includes -Icsrc/compile -O3 -std=c++20 -g -Wno-reorder -DBF16_AVAILABLE -DTORCH_EXTENSION_NAME=dc_op"
  "csrc/adam/fused_adam_frontend.cpp|-Icsrc/includes -Icsrc/adam -O3 -std=c++20 -g -Wno-reorder -DVERSION_GE_1_1 -DVERSION_GE_1_3 -DVERSION_GE_1_5 -DBF16_AVAILABLE -DTORCH_EXTENSION_NAME=fused_adam_op"
  "csrc/adam/cpu_adam.cpp|-Icsrc/includes -O3 -g -Wno-reorder -march=native -fopenmp -D__AVX512__ -DTORCH_EXTENSION_NAME=cpu_adam_op -std=c++20"
  "csrc/utils/py_ds_utils.cpp|-DTORCH_EXTENSION_NAME=utils_op -std=c++20"
)
cd "$src"
compile() {  # compile FILE FLAGS OUT [EXTRA]: writes "cpu_seconds max_kib" to $work/r (a failure stops the bench)
  /usr/bin/time -f '%U %S %M' -o "$work/t" g++ $base $2 -c "$1" -o "$3" ${4:-} -g0 -w
  awk '{printf "%.2f %d\n", $1 + $2, $3}' "$work/t" > "$work/r"
}
{
  echo "gcc's garbage-collection threshold: gcc's default vs --param=ggc-min-heapsize=$kib"
  echo "DeepSpeed 0.19.8, torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)'), $(g++ --version | head -1), $(date -u +%F), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%-40s %22s %22s %6s %s\n' file "default (CPU s, MiB)" "threshold (CPU s, MiB)" ratio "same object"
  sum_a=0 sum_b=0 all_same=yes
  for entry in "${files[@]}"; do
    f=${entry%%|*} flags=${entry#*|}
    compile "$f" "$flags" "$work/a.o" && read -r a ma < "$work/r"
    compile "$f" "$flags" "$work/b.o" "--param=ggc-min-heapsize=$kib" && read -r b mb < "$work/r"
    same=yes; cmp -s "$work/a.o" "$work/b.o" || { same=NO; all_same=no; }
    sum_a=$(awk "BEGIN {print $sum_a + $a}"); sum_b=$(awk "BEGIN {print $sum_b + $b}")
    printf '%-40s %12.2f s %6d MiB %12.2f s %6d MiB %6.2fx %s\n' "$(basename "$f")" "$a" $((ma / 1024)) "$b" $((mb / 1024)) "$(awk "BEGIN {print $b / $a}")" "$same"
  done
  printf '%-40s %12.2f s %10s %12.2f s %10s %6.2fx %s\n' total "$sum_a" "" "$sum_b" "" "$(awk "BEGIN {print $sum_b / $sum_a}")" "$all_same"
} | tee "$work/summary"
[ -z "$results" ] || cp "$work/summary" "$results"
