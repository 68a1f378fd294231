#!/usr/bin/env bash
# The long fuzzing runs: every tests/fuzz/<name>_fuzz.cpp for 1,000,000 executions (or $RUNS),
# starting from its committed seed corpus. Records per fuzzer the executions, the coverage
# (libFuzzer's final "cov" = code edges and "ft" = features), the corpus it grew, executions per
# second, the seconds it took and the crashes found, in bench/results/fuzz.txt (or $RESULTS).
# A crash input is kept under $WORK/<name>/: once fixed, copy it into tests/fuzz/corpus/<name>/.
#   usage: bench/fuzz/run.sh [BUILD_DIR]      (default build/fuzz; built if missing)
#   RUNS=N            executions per fuzzer (default 1000000)
#   FUZZERS="a b"     only these harnesses (default: all)
#   PARALLEL=1        run the fuzzers at the same time, one process each (on a machine with a
#                     core per fuzzer); each still makes its own RUNS executions
#   NO_BUILD=1        use the binaries in BUILD_DIR as they are (built on another machine)
#   MAX_TIME=SECONDS  caps each fuzzer's run (the executions column then says how far it got)
#   STALL=SECONDS     stops a fuzzer (SIGINT: it still prints its figures) once its coverage has
#                     not grown for that long; the "last_new" column says when it last grew
#                     (seconds into the run), whether or not STALL is set
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/fuzz}
runs=${RUNS:-1000000}
time_cap=()
[ -n "${MAX_TIME:-}" ] && time_cap=(-max_total_time="$MAX_TIME")
work=${WORK:-$build/bench-work}
out=${RESULTS:-bench/results/fuzz.txt}
[ -n "${NO_BUILD:-}" ] || tests/fuzz/build.sh tests/fuzz "$build" clang-19 clang++-19 >/dev/null

names=()
if [ -n "${FUZZERS:-}" ]; then
  read -r -a names <<<"$FUZZERS"
else
  for harness in tests/fuzz/*_fuzz.cpp; do names+=("$(basename "$harness" _fuzz.cpp)"); done
fi

run_one() {  # run_one NAME: one fuzzer's run; its table row goes to $work/NAME.row
  local name=$1 bin=$build/${1}_fuzz log=$work/$1.log start rc seconds last execs cov ft corp eps crashes
  local fifo=$work/$1.fifo pid line status top=0 grew=0 stopped=""
  rm -rf "${work:?}/$name" "$fifo" && mkdir -p "$work/$name" && mkfifo "$fifo"
  start=$EPOCHSECONDS
  # -error_exitcode stays the default (77): keep going to record the figures either way.
  set +e
  "$bin" -runs="$runs" -seed=1 -max_len=16384 -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
    "${time_cap[@]}" -artifact_prefix="$work/$name/" "$work/$name" "tests/fuzz/corpus/$name" >"$fifo" 2>&1 &
  pid=$!
  # Each line stamped with the seconds into the run; woken every 10 s to check for a stall.
  : >"$log"
  while :; do
    IFS= read -r -t 10 line
    status=$?
    if [ "$status" -eq 0 ]; then
      printf '%d %s\n' $((EPOCHSECONDS - start)) "$line" >>"$log"
      if [[ $line =~ cov:\ ([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -gt "$top" ]; then
        top=${BASH_REMATCH[1]} grew=$((EPOCHSECONDS - start))
      fi
    elif [ "$status" -le 128 ]; then
      break  # the fuzzer is done
    fi
    if [ -n "${STALL:-}" ] && [ $((EPOCHSECONDS - start - grew)) -gt "$STALL" ] && [ -z "$stopped" ]; then
      kill -INT "$pid" 2>/dev/null && stopped=1
    fi
  done <"$fifo"
  wait "$pid"
  rc=$?
  # libFuzzer leaves on SIGINT with 72: a stop that was asked for, not a finding.
  [ -n "$stopped" ] && [ "$rc" -eq 72 ] && rc=0
  set -e
  rm -f "$fifo"
  seconds=$((EPOCHSECONDS - start))
  last=$(grep -E '^[0-9]+ #[0-9]+' "$log" | tail -1)
  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
  cov=$(grep -oE 'cov: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo "?")
  ft=$(grep -oE 'ft: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo "?")
  corp=$(grep -oE 'corp: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo "?")
  eps=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  crashes=$(find "$work/$name" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ] && crashes="rc=$rc"
  printf '%-14s %10s %7s %7s %7s %9s %8s %8s %s\n' "$name" "${execs:-?}" "$cov" "$ft" "$corp" "$eps" "$seconds" "$grew" \
    "$crashes" >"$work/$name.row"
}

mkdir -p "$work" "$(dirname "$out")"
compiler=$(command -v clang++-19 >/dev/null && clang++-19 --version | head -1 || echo "binaries from $build")
if [ -n "${PARALLEL:-}" ]; then
  pids=()
  for name in "${names[@]}"; do run_one "$name" & pids+=($!); done
  for pid in "${pids[@]}"; do wait "$pid"; done
else
  for name in "${names[@]}"; do run_one "$name"; done
fi

tmp=$(mktemp)
{
  echo "# opforge fuzzing: $runs executions per fuzzer, seed corpus tests/fuzz/corpus/<name>/"
  echo "# $(date -u +%Y-%m-%dT%H:%MZ), $compiler, $(nproc) cores${PARALLEL:+, fuzzers run in parallel}"
  echo "# cov = code edges reached, ft = coverage features (libFuzzer's final counters)"
  printf '%-14s %10s %7s %7s %7s %9s %8s %8s %s\n' fuzzer executions cov ft corpus exec/s seconds last_new crashes
  for name in "${names[@]}"; do cat "$work/$name.row"; done
} >"$tmp"
mv "$tmp" "$out"
cat "$out"
