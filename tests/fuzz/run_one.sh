#!/usr/bin/env bash
# Runs one fuzzer over its seed corpus, then on new inputs: run_one.sh FUZZER SEEDS WORK [ARGS...].
# New inputs go to WORK (never into the committed SEEDS); a crash leaves crash-* in WORK and
# fails the test: add the input to SEEDS as a regression once fixed.
set -euo pipefail
fuzzer=$1 seeds=$2 work=$3
shift 3
rm -rf "$work" && mkdir -p "$work"
# Every seed alone first: a regression input names itself when it fails again.
"$fuzzer" -runs=0 "$seeds"
exec "$fuzzer" -seed=1 -max_len=16384 -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/" "$@" "$work" "$seeds"
