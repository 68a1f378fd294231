#!/usr/bin/env bash
# Every op of DeepSpeed 0.19.8 (DS_BUILD_OPS=1), one architecture, side by side in one run:
#   1. opforge build: every op that can be built is built, the others are named (the per-op table
#      and the total are recorded);
#   2. DeepSpeed's own `setup.py build_ext -j2 bdist_wheel` for the same op set: the ops opforge
#      built switched on by name (DS_BUILD_OPS=0, DS_BUILD_<X>=1), the ones it skipped or dropped off.
# Then both wheels are installed into fresh environments and every op in them is loaded
# (`<X>Builder().load()`, DS_ACCELERATOR=cuda). Peak memory: the largest single process of each
# build (time -f %M) and the machine's peak use during it (MemTotal - MemAvailable, sampled each
# second, minus the use before it started).
# opforge's recipe turns precompiled torch headers on ([build] pch = true). With
# OPFORGE_BENCH_PCH=both, opforge builds twice, cold (a fresh cache each): with --no-pch, then with them. Wall and CPU time (user + sys of the whole process
# tree) of every build: other work on the machine inflates wall time only.
# A side that fails is reported with its last lines and what the others measured is still printed
# (DeepSpeed's is tried once more when it fails on build_ext -j2's race, below, and says so);
# every side's log is kept in OPFORGE_BENCH_LOGS (default ~/.cache/opforge-bench/all_ops-logs).
# Targets: opforge <= 0.8x DeepSpeed's time (precompiled headers: <= 0.33x). Takes about an hour
# on a 2-core machine (one more opforge build with both): run it on a quiet one.
#   bench/deepspeed/all_ops.sh OPFORGE [RESULTS_FILE]   (e.g. bench/results/deepspeed_all_ops.txt)
set -euo pipefail
opforge=$(realpath "$1"); results=${2:-}
venv=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
sdist=${OPFORGE_SDIST_DIR:-$HOME/.cache/opforge/sdist}/deepspeed-0.19.8.tar.gz
[ -x "$venv/bin/python" ] && [ -f "$sdist" ] || { echo "run scripts/torch-venv first" >&2; exit 1; }
work=$(mktemp -d /tmp/opforge-bench-allops.XXXXXX)
logs=${OPFORGE_BENCH_LOGS:-$HOME/.cache/opforge-bench/all_ops-logs}
mkdir -p "$logs"
keep_logs() { cp "$work"/*.log "$work"/*.time "$logs/" 2>/dev/null || true; }
[ -n "${OPFORGE_BENCH_KEEP:-}" ] && echo "work folder: $work" >&2 || trap 'keep_logs; rm -rf "$work"' EXIT
export PATH="$venv/bin:$PATH"
for v in $(env | grep -o '^DS_BUILD_[A-Z0-9_]*' || true); do unset "$v"; done
unset TORCH_CUDA_ARCH_LIST MAX_JOBS
secs() { python3 -c "import time; print(f'{time.time():.3f}')"; }
used_kib() { awk '/^MemTotal:/ {t = $2} /^MemAvailable:/ {a = $2} END {print t - a}' /proc/meminfo; }
# watch_memory FILE: the machine's peak use (KiB) above the start, written to FILE when killed.
watch_memory() {
  local base peak now; base=$(used_kib); peak=$base
  trap 'echo $((peak - base)) > "$1"; exit 0' TERM
  while :; do now=$(used_kib); [ "$now" -gt "$peak" ] && peak=$now; sleep 1; done
}
gib() { python3 -c "print(f'{$1 / 1048576:.1f} GiB')"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
load0=$(load)

# 1. opforge, DS_BUILD_OPS=1 (twice with OPFORGE_BENCH_PCH=both: --no-pch, then the default).
mkdir -p "$work/src" && tar -xzf "$sdist" -C "$work/src"
cpu() { awk '{printf "%.1f", $3 + $4}' "$1"; }  # the time file's user + sys
declare -A wall_of mem_of peak_of cpu_of wheel_of ok_of
sides="of"
[ "${OPFORGE_BENCH_PCH:-}" = both ] && sides="of_nopch of"
for side in $sides; do
  rm -rf "$work/$side" && mkdir -p "$work/$side" && cp -r "$work/src/deepspeed-0.19.8" "$work/$side/"
  cat > "$work/$side/deepspeed.toml" <<'TOML'
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
list = "9.0"
[build]
backend = "command"
command = ["python", "setup.py", "bdist_wheel"]
pch = true
TOML
  flags=(); [ "$side" = of_nopch ] && flags=(--no-pch)
  export OPFORGE_CACHE_DIR="$work/cache-$side"
  watch_memory "$work/$side.mem" & watcher=$!
  t0=$(secs)
  ok_of[$side]=1
  (cd "$work/$side" && DS_BUILD_OPS=1 /usr/bin/time -f '%e %M %U %S' -o "$work/$side.time" "$opforge" build "${flags[@]}" deepspeed.toml) \
    > "$work/$side.log" 2>&1 || { ok_of[$side]=0; echo "opforge ($side) FAILED; its last lines:"; tail -40 "$work/$side.log"; }
  t1=$(secs); kill -TERM "$watcher"; wait "$watcher" || true
  wall_of[$side]=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
  cpu_of[$side]=$(cpu "$work/$side.time")
  peak_of[$side]=$(cut -d' ' -f2 "$work/$side.time")
  mem_of[$side]=$(cat "$work/$side.mem")
  wheel_of[$side]=$(ls "$work"/$side/dist/*.whl 2>/dev/null || true)
  keep_logs
done
of=${wall_of[of]}
of_wheel=${wheel_of[of]}
[ -n "$of_wheel" ] || of_wheel=${wheel_of[of_nopch]:-}
[ -n "$of_wheel" ] || { echo "no opforge wheel: nothing to compare (logs in $logs)"; exit 1; }
built=$(python3 -c "import json,sys; print(' '.join(sorted(json.load(open(sys.argv[1]))['inputs']['ops_installed'])))" \
  "$of_wheel.opforge-record.json")

# 2. DeepSpeed's setup.py for the ops opforge built (OPFORGE_BENCH_SKIP_DS=1: not run, to measure
#    opforge's sides alone).
vars=$(python3 - "$work/src/deepspeed-0.19.8" $built <<'PY'
import ast, os, sys
root, ops = sys.argv[1], set(sys.argv[2:])
# Each builder's NAME → BUILD_VAR, read as opforge reads them: the top-level modules, then the
# host-side optimizers of op_builder/cpu (cpu_adam, cpu_lion, cpu_adagrad live only there).
for f in sorted(os.listdir(os.path.join(root, "op_builder"))) + \
        ["cpu/" + c for c in sorted(os.listdir(os.path.join(root, "op_builder", "cpu")))]:
    if not f.endswith(".py"):
        continue
    tree = ast.parse(open(os.path.join(root, "op_builder", f)).read())
    for c in [n for n in tree.body if isinstance(n, ast.ClassDef)]:
        a = {t.targets[0].id: t.value.value for t in c.body if isinstance(t, ast.Assign)
             and isinstance(t.targets[0], ast.Name) and isinstance(t.value, ast.Constant)}
        if a.get("NAME") in ops and "BUILD_VAR" in a:
            print(f"{a['BUILD_VAR']}=1")
PY
)
ds_ok=1 ds_retried=
# DeepSpeed's side once: `build_ext -j2` builds two extensions at once in one build_temp, where
# torch's BuildExtension writes a build.ninja for each; when they clash ("ninja: warning: premature
# end of file") an extension's objects are never made and its link fails. That race (seen
# 2026-11-27 and 2026-11-29) is retried once in a fresh tree, and the summary says so; any other
# failure is reported as it is.
ds_side() {
  rm -rf "$work/ds" && mkdir -p "$work/ds" && tar -xzf "$sdist" -C "$work/ds"
  watch_memory "$work/ds.mem" & watcher=$!
  t0=$(secs)
  local rc=0
  (cd "$work/ds/deepspeed-0.19.8" && /usr/bin/time -f '%e %M %U %S' -o "$work/ds.time" env CUDA_HOME=/usr/local/cuda-13.0 \
     DS_ACCELERATOR=cuda DS_SKIP_CUDA_CHECK=1 TORCH_CUDA_ARCH_LIST=9.0 DS_ENABLE_NINJA=1 MAX_JOBS="$(nproc)" \
     DS_BUILD_OPS=0 $vars TORCH_NO_COMPILER_WRAPPER=1 python setup.py build_ext -j2 bdist_wheel) > "$work/ds.log" 2>&1 || rc=$?
  t1=$(secs); kill -TERM "$watcher"; wait "$watcher" || true
  return $rc
}
if [ -n "${OPFORGE_BENCH_SKIP_DS:-}" ]; then
  ds_ok=skipped ds=0 ds_cpu=0 ds_wheel=
else
  if ! ds_side; then
    if grep -q "premature end of file" "$work/ds.log" && grep -q "cannot find .*\.o: No such file" "$work/ds.log"; then
      ds_retried="after $(python3 -c "print(f'{$t1 - $t0:.0f}')") s (build_ext -j2's shared build.ninja; log: $logs/ds-try1.log)"
      mv "$work/ds.log" "$work/ds-try1.log"
      echo "DeepSpeed's setup.py failed on build_ext -j2's shared build.ninja; trying once more in a fresh tree"
      ds_side || { ds_ok=0; echo "DeepSpeed's setup.py FAILED again; its last lines:"; tail -40 "$work/ds.log"; }
    else
      ds_ok=0; echo "DeepSpeed's setup.py FAILED; its last lines:"; tail -40 "$work/ds.log"
    fi
  fi
  keep_logs
  ds=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
  ds_cpu=$(cpu "$work/ds.time")
  ds_wheel=$(ls "$work"/ds/deepspeed-0.19.8/dist/*.whl 2>/dev/null || true)
fi

# 3. Each wheel installed alone; every op it holds loads.
check() {  # check NAME WHEEL: prints "ok N ops load" or the failures
  # The wheel in its own folder on PYTHONPATH, beside the torch environment (a venv made from the
  # environment's python would see the base interpreter's packages, not the environment's).
  python -m pip install --quiet --no-deps --target "$work/site-$1" "$2" >/dev/null
  [ -d "$work/site-deps" ] || python -m pip install --quiet --target "$work/site-deps" tqdm hjson msgpack psutil \
    py-cpuinfo pydantic einops nvidia-ml-py >/dev/null
  (cd "$work" && DS_ACCELERATOR=cuda PYTHONPATH="$work/site-$1:$work/site-deps" python - <<'PY'
from deepspeed.git_version_info import installed_ops
from deepspeed.ops.op_builder.all_ops import ALL_OPS
bad = []
ops = sorted(op for op, on in installed_ops.items() if on)
for op in ops:
    try:
        ALL_OPS[op].load(verbose=False)
    except Exception as e:  # noqa: BLE001 - each failure is reported
        bad.append(f"{op}: {type(e).__name__}: {e}")
print(f"ok {len(ops)} ops load" if not bad else "FAILED " + "; ".join(bad))
PY
  ) || echo "FAILED: the check did not run"
}
of_check=$(check of "$of_wheel" 2>&1 | tail -1)
ds_check="not checked: no wheel"
[ -n "$ds_wheel" ] && ds_check=$(check ds "$ds_wheel" 2>&1 | tail -1)
load1=$(load)

{
  echo "DeepSpeed 0.19.8 sdist, DS_BUILD_OPS=1, torch $(python -c 'import torch; print(torch.__version__)' 2>/dev/null),"
  echo "CUDA 13.0 toolkit, one arch (9.0), $(nproc) cores, $(date -u +%F)"
  echo "load average (1/5/15 min) before: $load0, after: $load1"
  for side in $sides; do
    echo "opforge's per-op table ($([ "$side" = of ] && echo "precompiled torch headers on, the default" || echo "--no-pch")):"
    sed -n '/^ops:$/,/^wheel:/p' "$work/$side.log" | sed '$d'   # the precompiled torch header's lines too
  done
  echo "ops built: $built"
  for side in $sides; do
    printf '  opforge build %-9s %s\n' "$([ "$side" = of ] && echo "(pch)" || echo "(no pch)")" \
      "$([ "${ok_of[$side]}" = 1 ] && echo "wall ${wall_of[$side]} s, CPU ${cpu_of[$side]} s, largest process $(gib "${peak_of[$side]}"), machine peak +$(gib "${mem_of[$side]}")" || echo "FAILED after ${wall_of[$side]} s (log: $logs/$side.log)")"
  done
  echo "  opforge install (pch wheel): $of_check"
  [ -z "$ds_retried" ] || echo "  DeepSpeed setup.py build_ext -j2 bdist_wheel: its first try FAILED $ds_retried; measured: the second"
  if [ "$ds_ok" = 1 ]; then
    echo "  DeepSpeed setup.py build_ext -j2 bdist_wheel: wall ${ds} s, CPU ${ds_cpu} s, largest process $(gib "$(cut -d' ' -f2 "$work/ds.time")"), machine peak +$(gib "$(cat "$work/ds.mem")"); install: $ds_check"
    # The ratio compares the same work only when both wheels hold the same ops.
    [ "${of_check%% ops load}" = "${ds_check%% ops load}" ] ||
      echo "  NOTE: the wheels hold different op sets (opforge: $of_check; DeepSpeed: $ds_check): the ratios below compare different work"
    for side in $sides; do
      [ "${ok_of[$side]}" = 1 ] && python3 -c "print(f'  opforge ($side) / DeepSpeed: wall {${wall_of[$side]} / $ds:.2f}x, CPU {${cpu_of[$side]} / $ds_cpu:.2f}x (targets <= 0.8x; with precompiled headers <= 0.33x)')"
    done
  elif [ "$ds_ok" = skipped ]; then
    echo "  DeepSpeed setup.py build_ext -j2 bdist_wheel: not run (OPFORGE_BENCH_SKIP_DS)"
  else
    echo "  DeepSpeed setup.py build_ext -j2 bdist_wheel: FAILED after ${ds} s (log: $logs/ds.log); its last error:"
    grep -n "error\|Error" "$work/ds.log" | tail -5 | sed 's/^/    /'
  fi
  if [ "${ok_of[of_nopch]:-0}" = 1 ] && [ "${ok_of[of]}" = 1 ]; then
    python3 -c "print(f'  precompiled headers / none: wall {${wall_of[of]} / ${wall_of[of_nopch]}:.2f}x, CPU {${cpu_of[of]} / ${cpu_of[of_nopch]}:.2f}x')"
    [ "$(sha256sum < "${wheel_of[of]}")" = "$(sha256sum < "${wheel_of[of_nopch]}")" ] && echo "  the same wheel bytes with and without: yes" ||
      echo "  the same wheel bytes with and without: NO"
  fi
} | tee "$work/summary.txt"
[ -n "$results" ] && cp "$work/summary.txt" "$results"
exit 0
