#!/usr/bin/env bash
# The long fuzzing runs: every tests/fuzz/<name>_fuzz.cpp for 1,000,000 executions (or $RUNS),
# starting from its committed seed corpus, one after the other. Records per fuzzer the
# executions, the coverage (libFuzzer's final "cov" = code edges and "ft" = features), the corpus
# it grew, executions per second and the crashes found, in bench/results/fuzz.txt.
# A crash input is kept under $WORK/<name>/: once fixed, copy it into tests/fuzz/corpus/<name>/.
#   usage: bench/fuzz/run.sh [BUILD_DIR]      (default build/fuzz; built if missing)
#   MAX_TIME=SECONDS caps each fuzzer's run (the executions column then says how far it got).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/fuzz}
runs=${RUNS:-1000000}
time_cap=()
[ -n "${MAX_TIME:-}" ] && time_cap=(-max_total_time="$MAX_TIME")
work=${WORK:-$build/bench-work}
out=bench/results/fuzz.txt
tests/fuzz/build.sh tests/fuzz "$build" clang-19 clang++-19 >/dev/null

mkdir -p "$(dirname "$out")"
tmp=$(mktemp)
{
  echo "# opforge fuzzing: $runs executions per fuzzer, seed corpus tests/fuzz/corpus/<name>/"
  echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(clang++-19 --version | head -1), $(nproc) cores (shared machine)"
  echo "# cov = code edges reached, ft = coverage features (libFuzzer's final counters)"
  printf '%-14s %10s %7s %7s %7s %9s %8s %s\n' fuzzer executions cov ft corpus exec/s seconds crashes
} >"$tmp"
for harness in tests/fuzz/*_fuzz.cpp; do
  name=$(basename "$harness" _fuzz.cpp)
  bin=$build/${name}_fuzz
  rm -rf "$work/$name" && mkdir -p "$work/$name"
  log=$work/$name.log
  start=$(date +%s)
  # -error_exitcode stays the default (77): keep going to record the figures either way.
  set +e
  "$bin" -runs="$runs" -seed=1 -max_len=16384 -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
    "${time_cap[@]}" -artifact_prefix="$work/$name/" "$work/$name" "tests/fuzz/corpus/$name" >"$log" 2>&1
  rc=$?
  set -e
  seconds=$(( $(date +%s) - start ))
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
  cov=$(grep -oE 'cov: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo "?")
  ft=$(grep -oE 'ft: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo "?")
  corp=$(grep -oE 'corp: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo "?")
  eps=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  crashes=$(find "$work/$name" -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'leak-*' -o -maxdepth 1 -name 'timeout-*' -o -maxdepth 1 -name 'oom-*' | wc -l)
  [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ] && crashes="rc=$rc"
  printf '%-14s %10s %7s %7s %7s %9s %8s %s\n' "$name" "${execs:-?}" "$cov" "$ft" "$corp" "$eps" "$seconds" "$crashes" >>"$tmp"
done
mv "$tmp" "$out"
cat "$out"
