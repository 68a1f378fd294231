#!/usr/bin/env bash
# A project from its PyPI sdist, built by opforge for one architecture with the recipe beside this
# script (bench/projects/PROJECT.toml: mamba-ssm, flash-attn), measured file by file:
#   - the whole build: wall, CPU of the process tree (time -f %U %S), the largest process's peak;
#   - each compile step: wall, CPU and peak memory of its process tree (stepwatch.py, sampled), and
#     ninja's own wall time of it (the record's inputs.ninja_steps);
#   - the wheel: its GPU code (inspect), and `import` of its extension with the environment's torch
#     (installed with pip --target into a throwaway folder);
#   - with OPFORGE_BENCH_PIP=1, first `pip wheel --no-build-isolation` of the same sdist with the
#     project's own architectures and MAX_JOBS=2, side by side (hours for these two on 2 cores).
# The work folder and opforge's cache are kept (default ~/.cache/opforge-bench/PROJECT): a build
# killed by a time limit resumes where it stopped on the next run (the same recipe, the same
# environment) — flash-attn does not fit one session on 2 cores. OPFORGE_BENCH_JOBS=N passes -j N
# (default: opforge's memory-aware count).
#   bench/projects/sdist.sh OPFORGE PROJECT [RESULTS_FILE]   (e.g. bench/results/projects.txt)
set -euo pipefail
opforge=$(realpath "$1") project=$2 results=${3:+$(realpath -m "$3")}
here=$(cd "$(dirname "$0")" && pwd)
# torch 2.14 (scripts/torch-venv's second environment): torch 2.15's headers require C++20
# (ATen.h: "#error C++20 or later compatible compiler is required"), and both projects compile
# with -std=c++17, so neither builds against torch 2.15, with pip or with opforge.
venv=${OPFORGE_TORCH214_VENV:-$HOME/.cache/opforge/torch214-venv}
[ -x "$venv/bin/python" ] || { echo "run scripts/torch-venv first" >&2; exit 1; }
case $project in
  mamba-ssm) version=2.3.1 module=selective_scan_cuda switch=MAMBA_FORCE_BUILD ;;
  flash-attn) version=2.8.3 module=flash_attn_2_cuda switch=FLASH_ATTENTION_FORCE_BUILD ;;
  *) echo "unknown project $project (mamba-ssm, flash-attn)" >&2; exit 2 ;;
esac
sdist=$("$here/../../tests/e2e/fetch_sdist.sh" "$project" "$version")
work=${OPFORGE_BENCH_DIR:-$HOME/.cache/opforge-bench/$project}
mkdir -p "$work/of"
unset TORCH_CUDA_ARCH_LIST MAX_JOBS CUDA_HOME CUDA_PATH
export PATH="$venv/bin:$PATH" OPFORGE_CACHE_DIR="$work/cache"
load() { cut -d' ' -f1-3 /proc/loadavg; }
timed() {  # timed NAME CMD...: runs CMD under time(1) and stepwatch.py; NAME.{time,steps,log}
  local name=$1; shift
  /usr/bin/time -f "%e %M %U %S" -o "$work/$name.time" "$@" > "$work/$name.log" 2>&1 &
  local pid=$!
  python3 "$here/stepwatch.py" "$pid" "$work/$name.steps" "$work/" &
  local watch=$!
  local rc=0; wait "$pid" || rc=$?
  wait "$watch" || true
  return $rc
}
steps_table() {  # steps_table FILE: the heaviest steps and the totals
  python3 - "$1" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
rows = [(r[0], float(r[1]), float(r[2]), float(r[3])) for r in rows]
if not rows:
    print("  (no compile step seen)"); sys.exit()
cu = [r for r in rows if r[0].endswith(".cu")]
print("  %d compile steps (%d .cu): wall sum %.0f s, CPU sum %.0f s; per .cu file: CPU median %.0f s, max %.0f s; peak median %.2f GiB, max %.2f GiB"
      % (len(rows), len(cu), sum(r[1] for r in rows), sum(r[2] for r in rows),
         sorted(r[2] for r in cu)[len(cu) // 2] if cu else 0, max((r[2] for r in cu), default=0),
         sorted(r[3] for r in cu)[len(cu) // 2] / 1024 if cu else 0, max((r[3] for r in cu), default=0) / 1024))
for name, wall, cpu, peak in sorted(rows, key=lambda r: -r[2])[:12]:
    print("  %-70s wall %7.1f s  CPU %7.1f s  peak %5.2f GiB" % (name[-70:], wall, cpu, peak / 1024))
PY
}
gpu_code() { "$opforge" inspect --json "$1" | python3 -c "
import json, sys
j = json.load(sys.stdin)
print(' '.join(sorted({i['name'] for f in j['files'] if 'elf' in f for i in f['elf']['fatbin']})))"; }
unpack() {  # unpack DIR: the sdist into DIR, its C++ standard raised to torch's
  [ -d "$1/${project//-/_}-$version" ] || tar -xzf "$sdist" -C "$1"
  # Both setup.py files pass -std=c++17 to g++ and nvcc, after torch's own flags; torch 2.14's
  # headers refuse anything before C++20 (ATen.h #error), so neither sdist builds as published
  # against it, with pip or with opforge. The one change a user has to make in the unpacked sdist:
  sed -i 's/-std=c++17/-std=c++20/g' "$1/${project//-/_}-$version/setup.py"
}
report=""
say() { echo "$*"; report+="$*"$'\n'; }
say "$project $version (PyPI sdist), $("$venv/bin/python" -c 'import torch; print("torch", torch.__version__)'), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB; load before: $(load)"

if [ "${OPFORGE_BENCH_PIP:-}" = "1" ]; then
  rm -rf "$work/pip" && mkdir -p "$work/pip" && unpack "$work/pip"
  (cd "$work/pip/${project//-/_}-$version" && export MAX_JOBS=2 "$switch=TRUE" && timed pip "$venv/bin/python" -m pip wheel --no-build-isolation --no-deps -w "$work/pip/out" .) \
    || { tail -30 "$work/pip.log"; exit 1; }
  read -r e m u s < "$work/pip.time"
  say "pip wheel (its own list, MAX_JOBS=2):  wall $e s  CPU $(python3 -c "print($u + $s)") s  peak $(python3 -c "print('%.2f' % ($m / 2**20))") GiB  GPU code: $(gpu_code "$(ls "$work"/pip/out/*.whl)")"
  say "$(steps_table "$work/pip.steps")"
fi

unpack "$work/of"
cp "$here/$project.toml" "$work/of/$project.toml"
rm -rf "$work/of/dist"
(cd "$work/of" && timed of "$opforge" build "$project.toml" ${OPFORGE_BENCH_JOBS:+-j "$OPFORGE_BENCH_JOBS"}) || { tail -30 "$work/of.log"; exit 1; }
read -r e m u s < "$work/of.time"
wheel=$(ls "$work"/of/dist/*.whl)
say "opforge build ([arch] list = \"9.0\"):    wall $e s  CPU $(python3 -c "print($u + $s)") s  peak $(python3 -c "print('%.2f' % ($m / 2**20))") GiB  GPU code: $(gpu_code "$wheel")"
say "opforge's summary: $(grep '^GPU code' "$work/of.log")"
grep -q '^resumed:' "$work/of.log" && say "$(grep '^resumed:' "$work/of.log") (a build of an earlier run was killed: its wall and CPU here are this run's alone)"
say "$(python3 - "$wheel.opforge-record.json" <<'PY'
import json, sys
n = json.load(open(sys.argv[1]))["inputs"].get("ninja_steps", {})
secs = sorted(n.get("seconds", {}).values())
cu = len(secs)
print("ninja: %d steps compiled, %d reused; per step (ninja's wall): median %.0f s, max %.0f s, sum %.0f s"
      % (n.get("compiled", 0), n.get("reused", 0), secs[cu // 2] if cu else 0, secs[-1] if cu else 0, sum(secs)))
PY
)"
say "$(steps_table "$work/of.steps")"
rm -rf "$work/site"
"$venv/bin/python" -m pip install --quiet --no-deps --target "$work/site" "$wheel"
PYTHONPATH="$work/site" "$venv/bin/python" -c "import torch, $module; print('import $module: ok with torch', torch.__version__)" > "$work/import.log" 2>&1 \
  || { cat "$work/import.log"; exit 1; }
say "$(cat "$work/import.log")"
say "load after: $(load)"
[ -z "$results" ] || printf '%s (bench/projects/sdist.sh %s)\n%s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$project" "$report" >> "$results"
