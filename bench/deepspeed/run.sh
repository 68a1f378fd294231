#!/usr/bin/env bash
# DeepSpeed's own prebuild against `opforge build`, side by side in one run, for the same four ops
# (cpu_adam, utils, fused_adam for one architecture, async_io; DeepSpeed adds pin_memory for
# async_io in both):
#   1. DeepSpeed's setup.py, as a user types it to get CUDA code on a GPU-less machine:
#      DS_ACCELERATOR=cuda DS_SKIP_CUDA_CHECK=1 TORCH_CUDA_ARCH_LIST=8.0 DS_BUILD_OPS=0
#      DS_BUILD_CPU_ADAM=1 DS_BUILD_UTILS=1 DS_BUILD_FUSED_ADAM=1 DS_BUILD_AIO=1
#      python setup.py build_ext -j2 bdist_wheel
#   2. opforge build (cold: empty compiler cache), same ops and arch.
#   3. opforge build again after `rm -rf build` in the checkout, with the compiler cache warm
#      ([build] cache = "ccache", a private CCACHE_DIR).
# Targets: opforge cold <= 0.9x DeepSpeed's time; warm rebuild >= 5x faster than cold.
#   bench/deepspeed/run.sh OPFORGE [RESULTS_FILE]
set -euo pipefail
opforge=$(realpath "$1"); results=${2:-}
venv=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
sdist=${OPFORGE_SDIST_DIR:-$HOME/.cache/opforge/sdist}/deepspeed-0.19.8.tar.gz
[ -x "$venv/bin/python" ] && [ -f "$sdist" ] || { echo "run scripts/torch-venv first" >&2; exit 1; }
work=$(mktemp -d /tmp/opforge-bench-ds.XXXXXX)
# OPFORGE_BENCH_KEEP=1 keeps the work folder (logs, ninja logs) for a closer look.
[ -n "${OPFORGE_BENCH_KEEP:-}" ] && echo "work folder: $work" >&2 || trap 'rm -rf "$work"' EXIT
export PATH="$venv/bin:$PATH"
for v in $(env | grep -o '^DS_BUILD_[A-Z0-9_]*' || true); do unset "$v"; done
unset TORCH_CUDA_ARCH_LIST MAX_JOBS
# CPU seconds (user + system) of a finished build and all its children, from time(1)'s output.
cpu() { awk '{printf "%.0f", $2 + $3}' "$1"; }
secs() { python3 -c "import time; print(f'{time.time():.3f}')"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
sos() { unzip -Z1 "$1" | grep -c '\.so$'; }  # compiled libraries in a wheel
load0=$(load)

# 1. DeepSpeed's own build.
mkdir -p "$work/ds" && tar -xzf "$sdist" -C "$work/ds"
t0=$(secs)
(cd "$work/ds/deepspeed-0.19.8" && /usr/bin/time -f '%e %U %S' -o "$work/ds.time" env CUDA_HOME=/usr/local/cuda-13.0 DS_ACCELERATOR=cuda DS_SKIP_CUDA_CHECK=1 \
   TORCH_CUDA_ARCH_LIST=8.0 DS_BUILD_OPS=0 DS_BUILD_CPU_ADAM=1 DS_BUILD_UTILS=1 DS_BUILD_FUSED_ADAM=1 DS_BUILD_AIO=1 \
   TORCH_NO_COMPILER_WRAPPER=1 python setup.py build_ext -j2 bdist_wheel) > "$work/ds.log" 2>&1 \
  || { tail -30 "$work/ds.log"; exit 1; }
t1=$(secs); ds=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
ds_so=$(sos "$(ls "$work"/ds/deepspeed-0.19.8/dist/*.whl)")

# 2. and 3. opforge.
mkdir -p "$work/of" && tar -xzf "$sdist" -C "$work/of"
cat > "$work/of/deepspeed.toml" <<'TOML'
[package]
name = "deepspeed"
version = "0.19.8"
local_version = "cu{cuda_major}"
[source]
path = "deepspeed-0.19.8"
[cuda]
version = "torch"
python = "python"
[arch]
list = "8.0"
[ops]
cpu_adam = true
utils = true
fused_adam = true
async_io = true
[build]
backend = "command"
command = ["python", "setup.py", "bdist_wheel"]
cache = "ccache"
TOML
export OPFORGE_CACHE_DIR="$work/cache" CCACHE_DIR="$work/ccache"
ccache --zero-stats >/dev/null 2>&1 || true
t0=$(secs)
(cd "$work/of" && /usr/bin/time -f '%e %U %S' -o "$work/cold.time" "$opforge" build deepspeed.toml) > "$work/cold.log" 2>&1 || { tail -30 "$work/cold.log"; exit 1; }
t1=$(secs); cold=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
rm -rf "$work/of/deepspeed-0.19.8/build" "$work/of/dist"
ccache --zero-stats >/dev/null 2>&1 || true
t0=$(secs)
(cd "$work/of" && /usr/bin/time -f '%e %U %S' -o "$work/warm.time" "$opforge" build deepspeed.toml) > "$work/warm.log" 2>&1 || { tail -30 "$work/warm.log"; exit 1; }
t1=$(secs); warm=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
hits=$(ccache --print-stats 2>/dev/null | awk '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" {s += $2} END {print s + 0}')
misses=$(ccache --print-stats 2>/dev/null | awk '$1 == "cache_miss" {print $2}')
of_so=$(sos "$(ls "$work"/of/dist/*.whl)")
load1=$(load)

{
  echo "DeepSpeed 0.19.8 sdist, torch $(python -c 'import torch; print(torch.__version__)' 2>/dev/null), CUDA 13.0 toolkit, one arch (8.0),"
  echo "ops cpu_adam utils fused_adam async_io (+ pin_memory), $(nproc) cores, $(date -u +%F)"
  echo "load average (1/5/15 min) before: $load0, after: $load1"
  echo "compiled libraries in the wheels: DeepSpeed's $ds_so, opforge's $of_so"
  echo "  DeepSpeed setup.py build_ext -j2 bdist_wheel: ${ds} s (CPU $(cpu "$work/ds.time") s)"
  echo "  opforge build, cold (empty ccache):           ${cold} s (CPU $(cpu "$work/cold.time") s)"
  echo "  opforge build, rm -rf build, warm ccache:     ${warm} s (CPU $(cpu "$work/warm.time") s; ccache hits ${hits}, misses ${misses:-0})"
  python3 -c "print(f'  opforge cold / DeepSpeed: {$cold / $ds:.2f}x (target <= 0.9x)'); print(f'  cold / warm rebuild: {$cold / $warm:.1f}x (target >= 5x)')"
} | tee "$work/summary.txt"
[ -n "$results" ] && cp "$work/summary.txt" "$results"
exit 0
