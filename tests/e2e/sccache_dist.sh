#!/usr/bin/env bash
# sccache_dist.sh OPFORGE SRC OUT TOOLS: `[build] cache = "sccache"` with an sccache-dist cluster on
# this machine (tests/cluster/sccache_dist.sh: a scheduler and two build servers on 127.0.0.1,
# bubblewrap, as root; sccache from TOOLS/bin, pinned in scripts/deps). The default ops built
# through it: sccache's own counters show steps compiled on the build servers, and the wheel is
# byte-identical to a build without a cache. Then the faults: a wrong token, the servers killed
# (the scheduler still counts them), the scheduler stopped, a scheduler with no server: each
# build finishes here, says why in one line, and gives the same bytes. The client token appears
# in no output, record, log or wheel; no sccache process is left behind.
set -euo pipefail
opforge="$1" src="$2" out="$3" tools="$4"
. "$src/tests/e2e/lib.sh"
[ -x "$tools/bin/sccache" ] && [ -x "$tools/bin/sccache-dist" ] ||
  { echo "SKIP: sccache is not in $tools (scripts/deps installs it)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: sccache-dist's overlay builder needs root"; exit 77; }
command -v bwrap >/dev/null || { echo "SKIP: bubblewrap is not installed (scripts/deps installs it)"; exit 77; }
export PATH="$tools/bin:$PATH" SCCACHE_DIST="$tools/bin/sccache-dist"
# A scheduler port of this test's own, away from a user's 10600.
export SCHED_PORT=10690
cluster="$src/tests/cluster/sccache_dist.sh"
rm -rf "$out" && mkdir -p "$out"
trap '"$cluster" stop "$out/cluster" >/dev/null 2>&1 || true' EXIT
cd "$out"
"$cluster" recipe recipe.toml "$src" "http://127.0.0.1:$SCHED_PORT"
export SOURCE_DATE_EPOCH=1700000000
"$opforge" build recipe.toml --cache none --build-dir "$out/local/b" --dist-dir "$out/local/d" >local.txt 2>&1 ||
  { cat local.txt; fail "the build without a cache"; }
want=$(ls "$out"/local/d/*.whl)
want_sha=$(sha256sum "$want" | cut -d' ' -f1)

"$cluster" start "$out/cluster" 2
token=$(cat "$out/cluster/token")
build() {  # build NAME [TOKEN]: a build through the cluster, into NAME/
  local t=${2:-$token}
  OPFORGE_SCHEDULER_TOKEN="$t" SCCACHE_DIR="$out/$1/sccache" timeout 900 "$opforge" build recipe.toml \
    --build-dir "$out/$1/b" --dist-dir "$out/$1/d" >"$1.txt" 2>&1 || { cat "$1.txt"; fail "$1: the build failed"; }
  local got
  got=$(sha256sum "$out"/$1/d/*.whl | cut -d' ' -f1)
  [ "$got" = "$want_sha" ] || { cat "$1.txt"; fail "$1: the wheel differs from the build without a cache"; }
  grep -rqF "$token" "$1.txt" "$out/$1/d" "$out/$1/b" && fail "$1: the client token was written out"
  grep "^sccache: " "$1.txt" | sed "s/^/$1: /"
}
build remote
grep -q "^sccache: 2 build servers, 4 CPUs at http://127.0.0.1:$SCHED_PORT: compile steps go there$" remote.txt ||
  fail "remote: the scheduler's servers are not named"
# The counters, not the exit code: steps ran on both servers... or at least on one.
grep -Eq "^sccache: [0-9]+ compile steps: [1-9][0-9]* on 127.0.0.1:1050[12]" remote.txt || fail "remote: no step compiled remotely"
/usr/bin/python3 - "$out"/remote/d/*.opforge-record.json <<'PY'
import json, sys
steps = json.load(open(sys.argv[1]))["inputs"]["compile_steps"]["sccache"]
assert sum(steps["build_servers"].values()) > 0, steps
print("remote: record:", steps)
PY

build bad_token wrong-token
grep -q "^sccache: a test compile did not run on a build server (.*401.*) at http://127.0.0.1:$SCHED_PORT: every step compiles here$" bad_token.txt ||
  fail "bad_token: not said"
"$cluster" stop-servers "$out/cluster"
build servers_killed
grep -q "^sccache: .*: every step compiles here$" servers_killed.txt || fail "servers_killed: not said"
"$cluster" stop "$out/cluster"
build scheduler_down
grep -q "^sccache: the scheduler cannot be reached (.*) at http://127.0.0.1:$SCHED_PORT: every step compiles here$" \
  scheduler_down.txt || fail "scheduler_down: not said"
"$cluster" start "$out/cluster" 0
token=$(cat "$out/cluster/token")
build no_servers
grep -q "^sccache: the scheduler has no build server at http://127.0.0.1:$SCHED_PORT: every step compiles here$" \
  no_servers.txt || fail "no_servers: not said"
"$cluster" stop "$out/cluster"
# Nothing of the builds' sccache left: no client server, no private folder.
left=$(pgrep -a -f "$tools/bin/sccache" | grep -v defunct || true)
[ -z "$left" ] || fail "left running: $left"
echo "sccache_dist: remote steps on the build servers, every fault compiled here, the same bytes ($want_sha)"
