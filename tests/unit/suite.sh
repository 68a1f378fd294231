#!/usr/bin/env bash
# suite.sh BIN SUITE: the unit tests of one GoogleTest suite in one process (one ctest test per suite
# instead of per test: each process's start-up was about a third of the unit tests' CPU). A failed
# test is named in the output ("[  FAILED  ] Suite.Test"). When none failed and one skipped
# (GTEST_SKIP): exit 77, so that ctest still lists the suite among the tests that did not run.
out=$("$1" --gtest_filter="$2.*" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -eq 0 ] && [[ $out == *$'\n[  SKIPPED ] '[0-9]*' listed below'* ]]; then
  echo "SKIP: the tests named above skipped (the others passed)"
  exit 77
fi
exit "$rc"
