#!/usr/bin/env bash
# causal-conv1d 1.7.0 from its PyPI sdist, side by side in one run, each from a fresh copy:
#   1. `pip wheel --no-build-isolation --no-deps` with MAX_JOBS=2 and CAUSAL_CONV1D_FORCE_BUILD=TRUE:
#      the project's own nine architectures (sm_75 … sm_121), which is what a user gets from pip;
#   2. `opforge build` of docs/external-projects.md's recipe with [arch] list = "9.0": one.
# Wall time, CPU time of each whole process tree (time -f %U %S: not inflated by other work on the
# machine), the largest process's peak memory (%M) and the GPU code each wheel holds.
# OPFORGE_BENCH_PCH=both: opforge builds a second time, with --no-pch (precompiled torch headers off),
# from a fresh copy and cache, and the two are compared (target: no slower with them);
# OPFORGE_BENCH_SKIP_PIP=1 leaves pip's side out (it takes most of the hour).
# Target: opforge <= 0.2x pip's time. The environment is scripts/torch-venv's torch 2.14 (CUDA 13.0,
# the machine's toolkit exactly). Takes over an hour on 2 cores: run it on a quiet machine.
#   bench/projects/causal_conv1d.sh OPFORGE [RESULTS_FILE]   (e.g. bench/results/projects.txt)
set -euo pipefail
opforge=$(realpath "$1"); results=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
venv=${OPFORGE_TORCH214_VENV:-$HOME/.cache/opforge/torch214-venv}
sdist=$("$here/../../tests/e2e/fetch_sdist.sh" causal-conv1d 1.7.0)
[ -x "$venv/bin/python" ] || { echo "run scripts/torch-venv first" >&2; exit 1; }
[ -z "${OPFORGE_BENCH_SKIP_PIP:-}" ] || [ "${OPFORGE_BENCH_PCH:-}" = both ] ||
  { echo "OPFORGE_BENCH_SKIP_PIP=1 goes with OPFORGE_BENCH_PCH=both (there is nothing to compare otherwise)" >&2; exit 2; }
work=$(mktemp -d /tmp/opforge-bench-projects.XXXXXX)
[ -n "${OPFORGE_BENCH_KEEP:-}" ] && echo "work folder: $work" >&2 || trap 'rm -rf "$work"' EXIT
unset TORCH_CUDA_ARCH_LIST MAX_JOBS CUDA_HOME CUDA_PATH
export PATH="$venv/bin:$PATH"
secs() { python3 -c "import time; print(f'{time.time():.3f}')"; }
gpu_code() { "$opforge" inspect --json "$1" | python3 -c "
import json, sys
j = json.load(sys.stdin)
print(' '.join(sorted({i['name'] for f in j['files'] if 'elf' in f for i in f['elf']['fatbin']})))"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
load0=$(load)

if [ -z "${OPFORGE_BENCH_SKIP_PIP:-}" ]; then
mkdir -p "$work/pip" && tar -xzf "$sdist" -C "$work/pip"
t0=$(secs)
(cd "$work/pip/causal_conv1d-1.7.0" && MAX_JOBS=2 CAUSAL_CONV1D_FORCE_BUILD=TRUE \
  /usr/bin/time -f "%M %U %S" -o "$work/pip.rss" "$venv/bin/python" -m pip wheel --no-build-isolation --no-deps -w "$work/pip/out" .) \
  > "$work/pip.log" 2>&1 || { tail -30 "$work/pip.log"; exit 1; }
t1=$(secs)
pip_wheel=$(ls "$work"/pip/out/*.whl)
fi

mkdir -p "$work/of" && tar -xzf "$sdist" -C "$work/of"
cat > "$work/of/causal-conv1d.toml" <<TOML
[package]
name = "causal-conv1d"
version = "1.7.0"
local_version = "cu{cuda_major}{cuda_minor}torch{torch_major}{torch_minor}"

[source]
path = "causal_conv1d-1.7.0"

[cuda]
version = "torch"
python = "$venv/bin/python"

[arch]
list = "9.0"

[build]
backend = "command"
command = ["$venv/bin/python", "setup.py", "bdist_wheel"]
jobs = 2

[build.env]
CAUSAL_CONV1D_FORCE_BUILD = "TRUE"
TOML
if [ "${OPFORGE_BENCH_PCH:-}" = both ]; then
  # The same build with --no-pch first, from its own copy and a cold cache of its own.
  cp -r "$work/of" "$work/of_nopch"
  n0=$(secs)
  (cd "$work/of_nopch" && OPFORGE_CACHE_DIR="$work/cache_nopch" /usr/bin/time -f "%M %U %S" -o "$work/of_nopch.rss" \
    "$opforge" build --no-pch causal-conv1d.toml) > "$work/of_nopch.log" 2>&1 || { tail -30 "$work/of_nopch.log"; exit 1; }
  n1=$(secs)
fi
t2=$(secs)
(cd "$work/of" && OPFORGE_CACHE_DIR="$work/cache" /usr/bin/time -f "%M %U %S" -o "$work/of.rss" "$opforge" build causal-conv1d.toml) \
  > "$work/of.log" 2>&1 || { tail -30 "$work/of.log"; exit 1; }
t3=$(secs)
of_wheel=$(ls "$work"/of/dist/*.whl)
if [ "${OPFORGE_BENCH_PCH:-}" = both ]; then
  pch=$(python3 - "$n0" "$n1" "$t2" "$t3" "$(cat "$work/of_nopch.rss")" "$(cat "$work/of.rss")" <<'PY'
import sys
n0, n1, t2, t3 = map(float, sys.argv[1:5])
a, b = sys.argv[5].split(), sys.argv[6].split()
ca, cb = float(a[1]) + float(a[2]), float(b[1]) + float(b[2])
print("opforge --no-pch:                        wall %8.1f s  CPU %8.1f s  peak %5.2f GiB" % (n1 - n0, ca, int(a[0]) / 1048576))
print("opforge (precompiled torch headers on):  wall %8.1f s  CPU %8.1f s  peak %5.2f GiB" % (t3 - t2, cb, int(b[0]) / 1048576))
print("with / without: wall %.2fx, CPU %.2fx (target: no slower)" % ((t3 - t2) / (n1 - n0), cb / ca))
PY
)
  same=no
  [ "$(sha256sum < "$of_wheel")" = "$(sha256sum < "$(ls "$work"/of_nopch/dist/*.whl)")" ] && same=yes
  pch="$pch
$(grep '^precompiled torch header' "$work/of.log" || echo 'precompiled torch header: no line')
the same wheel bytes with and without: $same"
  echo "$pch"
  if [ -n "${OPFORGE_BENCH_SKIP_PIP:-}" ]; then
    [ -z "$results" ] || printf '%s (bench/projects/causal_conv1d.sh, OPFORGE_BENCH_PCH=both OPFORGE_BENCH_SKIP_PIP=1)\n%s\nload average before: %s, after: %s\n\n' \
      "$(date -u +%Y-%m-%dT%H:%MZ)" "$pch" "$load0" "$(load)" >> "$results"
    exit 0
  fi
fi

report=$(python3 - "$t0" "$t1" "$t2" "$t3" "$(cat "$work/pip.rss")" "$(cat "$work/of.rss")" \
  "$(gpu_code "$pip_wheel")" "$(gpu_code "$of_wheel")" "$load0" "$(load)" "$(grep '^GPU code' "$work/of.log")" <<'PY'
import sys
t0, t1, t2, t3 = map(float, sys.argv[1:5])
pip_s, of_s = t1 - t0, t3 - t2
# time(1)'s "%M %U %S": peak KiB of the largest process, then the CPU seconds of the whole tree
# (every process waited for), which other work on the machine does not inflate.
pip_kib, pip_u, pip_s_cpu = sys.argv[5].split()
of_kib, of_u, of_s_cpu = sys.argv[6].split()
pip_cpu, of_cpu = float(pip_u) + float(pip_s_cpu), float(of_u) + float(of_s_cpu)
print("causal-conv1d 1.7.0 (PyPI sdist), torch 2.14 / CUDA 13.0, %d cores" % __import__("os").cpu_count())
print("pip wheel (its own list, MAX_JOBS=2):  wall %8.1f s  CPU %8.1f s  peak %5.2f GiB  GPU code: %s" % (pip_s, pip_cpu, int(pip_kib) / 1048576, sys.argv[7]))
print("opforge build ([arch] list = \"9.0\"):    wall %8.1f s  CPU %8.1f s  peak %5.2f GiB  GPU code: %s" % (of_s, of_cpu, int(of_kib) / 1048576, sys.argv[8]))
print("opforge's summary: " + sys.argv[11])
print("ratio opforge / pip: wall %.2fx, CPU %.2fx (target <= 0.2x)" % (of_s / pip_s, of_cpu / pip_cpu))
print("load average before: %s, after: %s" % (sys.argv[9], sys.argv[10]))
PY
)
echo "$report"
[ -z "$results" ] || { printf '%s\n%s\n\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$report" >> "$results"; }
