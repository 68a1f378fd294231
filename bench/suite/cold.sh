#!/usr/bin/env bash
# bench/suite/cold.sh [OUT]: the README's test command as a newcomer runs it.
# A fresh clone of HEAD in a temporary folder, run as CI runs it (CI=true bash .ci/run), with
# nothing cached: its own HOME (so ~/.cache/opforge's torch environments, roots, zig toolchain and
# sdists, pip's cache, ccache and sccache all start empty), OPFORGE_CACHE_DIR, CCACHE_DIR,
# PIP_CACHE_DIR, XDG_CACHE_HOME. Debian's packages are the one thing it cannot remove: scripts/deps
# installs them once per machine (about 100 s on a new machine, said in the results, not counted).
# Records into OUT (default bench/results/suite_cold.txt, the newest run first):
#   - wall time and CPU seconds (user + system of everything the run waited for) of the whole run;
#   - each test's wall and CPU seconds (tests/cpu_time.sh, through OPFORGE_TEST_CPU_LOG), sorted;
#   - ctest's summary and labels.
# It takes the suite's own time (45-60 minutes on 2 cores): run it by hand, never from the suite.
#   OPFORGE_COLD_KEEP=1   keep the temporary folder (the clone, its HOME and build/) afterwards
set -euo pipefail
root_dir="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root_dir/bench/results/suite_cold.txt}"
out=$(realpath -m "$out")
[ -z "$(git -C "$root_dir" status --porcelain --untracked-files=no)" ] ||
  echo "note: the working tree has local changes; the clone is HEAD's ($(git -C "$root_dir" rev-parse --short HEAD))" >&2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/opforge-cold.XXXXXX")
# mktemp's 0700 would keep install.root_build's second build (as the user nobody) from the clone's
# opforge, as no checkout in a world-readable folder does.
chmod 755 "$tmp"
log_kept="${TMPDIR:-/tmp}/opforge-cold-$(date -u +%Y%m%dT%H%M%S).log"
# The run's log outlives the folder (a failed test's output is in it).
[ "${OPFORGE_COLD_KEEP:-0}" = 1 ] || trap 'cp "$tmp/run.log" "$log_kept" 2>/dev/null; rm -rf "$tmp"' EXIT
git clone -q --no-local "$root_dir" "$tmp/clone"
mkdir -p "$tmp/home" "$tmp/tmp"
# Git's identity and safe directories stay the user's (tests commit into fixtures' repositories).
[ -f "$HOME/.gitconfig" ] && cp "$HOME/.gitconfig" "$tmp/home/"
cpu_log="$tmp/test-cpu.tsv"
: >"$cpu_log"

commit=$(git -C "$tmp/clone" rev-parse --short HEAD)
echo "cold run of $commit in $tmp (log: $tmp/run.log, kept afterwards as $log_kept)"
start=$(date +%s.%N)
set +e
# A pyenv python on PATH finds its versions through PYENV_ROOT, which defaults to ~/.pyenv.
env -u OPFORGE_CACHE_DIR -u OPFORGE_TORCH_VENV -u OPFORGE_TORCH214_VENV -u OPFORGE_SDIST_DIR \
  -u OPFORGE_DIST_CACHE -u CCACHE_DIR -u SCCACHE_DIR -u PIP_CACHE_DIR -u XDG_CACHE_HOME \
  HOME="$tmp/home" TMPDIR="$tmp/tmp" CI=true OPFORGE_TEST_CPU_LOG="$cpu_log" \
  PYENV_ROOT="${PYENV_ROOT:-$HOME/.pyenv}" \
  bash -c 'cd "$1" && bash .ci/run' cold "$tmp/clone" >"$tmp/run.log" 2>&1 </dev/null
rc=$?
end=$(date +%s.%N)
times_out=$(mktemp)
times >"$times_out"  # in this shell, not $(...): the children's CPU is this shell's
read -r cu cs < <(tail -1 "$times_out")
rm -f "$times_out"
set -e
seconds() { local m=${1%%m*} s=${1#*m}; s=${s%s}; awk -v m="$m" -v s="$s" 'BEGIN { printf "%.0f", m * 60 + s }'; }
wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", b - a }')
user=$(seconds "$cu") sys=$(seconds "$cs")

{
  echo "== A cold ./scripts/test (CI=true bash .ci/run in a fresh clone, empty HOME and caches), $(date -u +%F), commit $commit"
  echo "machine: $(nproc) cores, $(awk '/^MemTotal:/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "exit status: $rc"
  echo "whole run: wall $wall s ($(awk -v w="$wall" 'BEGIN { printf "%.1f", w / 60 }') min), CPU $((user + sys)) s (user $user + system $sys)"
  # scripts/test's own last line: the machine's busy CPU-s counts what it did not wait for too.
  grep '^scripts/test: exit' "$tmp/run.log" || true
  grep -E '^[0-9]+% tests passed|tests failed out of|^Total Test time' "$tmp/run.log" || echo "(no ctest summary: the run stopped before or in ctest; the end of its log is below)"
  if grep -q 'The following tests FAILED' "$tmp/run.log"; then
    sed -n '/The following tests FAILED/,$p' "$tmp/run.log" | head -30
  fi
  if [ -s "$cpu_log" ]; then
    echo
    echo "the tests by CPU seconds (wall, CPU = user + system, exit status; tests/cpu_time.sh):"
    awk -F'\t' '{ printf "%8.1f %8.1f  %s (%s)\n", $2, $3 + $4, $1, $5 }' "$cpu_log" | sort -k2 -rn | head -40
    awk -F'\t' '{ w += $2; c += $3 + $4 } END { printf "all %d wrapped tests: %.0f s wall in all, %.0f CPU-s (the unit tests are not wrapped)\n", NR, w, c }' "$cpu_log"
  fi
  echo
  sed -n '/^Label Time Summary:/,/^Total Test time/p' "$tmp/run.log" | grep -v '^Total Test time' || true
  [ "$rc" -eq 0 ] || { echo; echo "the end of the run's log:"; tail -40 "$tmp/run.log"; }
  echo
  [ -f "$out" ] && cat "$out"
} >"$out.new"
mv "$out.new" "$out"
sed -n '1,/^$/p' "$out"
exit "$rc"
