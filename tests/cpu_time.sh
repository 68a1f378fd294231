#!/usr/bin/env bash
# cpu_time.sh LOG NAME COMMAND...: runs COMMAND as the test NAME and appends one line to LOG:
#   NAME <TAB> wall seconds <TAB> user seconds <TAB> system seconds <TAB> exit status
# The CPU seconds are this shell's children's (bash's `times`): the whole process tree the test
# waited for, which ctest's own timing (wall only) cannot tell. Only in the suite when
# OPFORGE_TEST_CPU_LOG is set at configure time (bench/suite/cold.sh); the exit status is the
# command's, so SKIP_RETURN_CODE and failures read as without it.
log=$1 name=$2
shift 2
start=$(date +%s.%N)
"$@"
rc=$?
end=$(date +%s.%N)
# `times` prints the shell's own user/system, then its children's, as e.g. "1m2.345s 0m0.120s".
times_out=$(mktemp)
times >"$times_out"  # not in $(...): a subshell would report its own children
children=$(tail -1 "$times_out")
rm -f "$times_out"
seconds() { local m=${1%%m*} s=${1#*m}; s=${s%s}; awk -v m="$m" -v s="$s" 'BEGIN { printf "%.2f", m * 60 + s }'; }
read -r cu cs <<<"$children"
printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')" \
  "$(seconds "$cu")" "$(seconds "$cs")" "$rc" >>"$log"
exit "$rc"
