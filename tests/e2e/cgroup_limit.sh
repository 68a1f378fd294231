#!/usr/bin/env bash
# jobs = "auto" under a real memory limit: the DeepSpeed-shaped fixture tree
# (tests/fixtures/every_op_deepspeed) built with DS_BUILD_OPS=1 inside a memory cgroup of 1.5 GiB.
# The plan must read the cgroup's limit (not the machine's MemAvailable) and run one compile at a
# time (1.5 GiB / 3 GiB per nvcc compile), and the build must end with its wheel and without an
# out-of-memory kill in the cgroup. cgroup v1 (memory controller) or v2 (memory.max); skipped
# where this process cannot make a cgroup (not root, no memory controller, a read-only cgroupfs).
# usage: cgroup_limit.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
opforge=$(realpath "$1") src=$(realpath "$2") work=$3
. "$src/tests/e2e/lib.sh"
cuda=${CUDA_HOME:-/usr/local/cuda}
skip() { echo "SKIP: $*"; exit 77; }
[ -x "$cuda/bin/nvcc" ] && [ -x /usr/bin/python3 ] || skip "no nvcc in $cuda/bin or no /usr/bin/python3: run scripts/deps"
limit=$((1536 * 1024 * 1024))
cg="" kind=""
if [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
  cg=/sys/fs/cgroup/memory/opforge-e2e.$$ kind=v1
  mkdir "$cg" 2>/dev/null && echo "$limit" > "$cg/memory.limit_in_bytes" 2>/dev/null || cg=""
elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
  cg=/sys/fs/cgroup/opforge-e2e.$$ kind=v2
  mkdir "$cg" 2>/dev/null && [ -f "$cg/memory.max" ] && echo "$limit" > "$cg/memory.max" 2>/dev/null || cg=""
fi
if [ -z "$cg" ]; then
  [ -n "${kind}" ] && rmdir "/sys/fs/cgroup/memory/opforge-e2e.$$" "/sys/fs/cgroup/opforge-e2e.$$" 2>/dev/null
  skip "cannot make a memory cgroup with a limit here (needs root and a writable memory controller)"
fi
trap 'rmdir "$cg" 2>/dev/null || true' EXIT
# A process must be able to join it (v2 refuses where the parent's controllers forbid it).
sh -c 'echo $$ > "$0/cgroup.procs"' "$cg" 2>/dev/null || skip "cannot move a process into $cg"
rm -rf "$work"; mkdir -p "$work"; work=$(realpath "$work")
every_op_recipe "$work/deepspeed.toml" "$src" 'cache = "none"'
# inside COMMAND...: runs the command as a member of the cgroup (a fresh shell joins it first).
inside() {
  (cd "$work" && env -i PATH=/usr/bin:/bin HOME="$work/home" OPFORGE_CACHE_DIR="$work/cache" CUDA_HOME="$cuda" \
    SOURCE_DATE_EPOCH=1700000000 DS_BUILD_OPS=1 sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "$@")
}
inside "$opforge" plan deepspeed.toml > "$work/plan.log" 2>&1 || { cat "$work/plan.log"; fail "plan: exit $?"; }
grep -q "jobs: 1 (2 cores\|jobs: 1 ([0-9]* cores\?; 1.5 GiB available (cgroup $kind" "$work/plan.log" ||
  { grep -i jobs "$work/plan.log"; fail "the plan did not size jobs by the cgroup's limit"; }
grep -q "available (cgroup $kind" "$work/plan.log" || { grep -i jobs "$work/plan.log"; fail "the plan does not name the cgroup"; }
set +e
inside "$opforge" build deepspeed.toml > "$work/build.log" 2>&1
rc=$?
set -e
[ "$rc" = 0 ] || { cat "$work/build.log"; fail "build under the limit: exit $rc"; }
[ -n "$(only_wheel "$work/dist")" ] || fail "no wheel"
grep -q "built          good_cuda" "$work/build.log" || { cat "$work/build.log"; fail "good_cuda was not built"; }
if [ "$kind" = v1 ]; then
  peak=$(cat "$cg/memory.max_usage_in_bytes")
  ooms=$(awk '/^oom_kill / {print $2}' "$cg/memory.oom_control")
else
  peak=$(cat "$cg/memory.peak" 2>/dev/null || echo 0)
  ooms=$(awk '/^oom_kill / {print $2}' "$cg/memory.events")
fi
[ "${ooms:-0}" = 0 ] || fail "$ooms out-of-memory kills in the cgroup"
echo "cgroup_limit: ok ($kind, limit $((limit >> 20)) MiB, peak $((peak >> 20)) MiB, $(grep -o 'jobs: .*' "$work/plan.log" | head -1))"
