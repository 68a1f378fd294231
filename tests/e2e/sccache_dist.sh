#!/usr/bin/env bash
# sccache_dist.sh OPFORGE SRC OUT TOOLS: `[build] cache = "sccache"` with an sccache-dist cluster on
# this machine (tests/cluster/sccache_dist.sh: a scheduler and two build servers on 127.0.0.1,
# bubblewrap, as root; sccache from TOOLS/bin, pinned in scripts/deps). The default ops built
# through it: sccache's own counters show steps compiled on the build servers, and the wheel is
# byte-identical to a build without a cache. Then the faults: a wrong token, the servers killed
# (the scheduler still counts them), servers that refuse the toolchain upload, the scheduler
# stopped, a scheduler with no server: each
# build finishes here, says why in one line, and gives the same bytes. The client token appears
# in no output, record, log or wheel; no sccache process is left behind. Secrets go only where
# they are needed: a command build whose setup.py prints its environment prints no token, no file
# any build wrote holds it, and the build servers' sandboxes (their `bwrap --setenv` command lines,
# sampled with ps during the builds) carry neither the token nor any variable a compile does not
# need (a canary planted in the build machine's environment). sccache's own words reach the user:
# a configuration it cannot load, and a scheduler named only by SCCACHE_CONF.
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
fake_pid= sampler_pid=
trap '"$cluster" stop "$out/cluster" >/dev/null 2>&1 || true; [ -z "$fake_pid" ] || kill "$fake_pid" 2>/dev/null || true; [ -z "$sampler_pid" ] || kill "$sampler_pid" 2>/dev/null || true' EXIT
cd "$out"
"$cluster" recipe recipe.toml "$src" "http://127.0.0.1:$SCHED_PORT"
export SOURCE_DATE_EPOCH=1700000000
"$opforge" build recipe.toml --cache none --build-dir "$out/local/b" --dist-dir "$out/local/d" >local.txt 2>&1 ||
  { cat local.txt; fail "the build without a cache"; }
want=$(ls "$out"/local/d/*.whl)
want_sha=$(sha256sum "$want" | cut -d' ' -f1)

"$cluster" start "$out/cluster" 2
token=$(cat "$out/cluster/token")
# Planted in the build machine's environment: no compile needs it, so no build server may see it.
export OPFORGE_TEST_CANARY="canary-$$-opforge"
sample_start() {  # sample_start NAME: every process's command line, as anyone there sees it, into NAME.ps
  rm -f "$out/$1.ps" "$out/$1.stop"
  ( while [ ! -e "$out/$1.stop" ]; do ps -eo args >>"$out/$1.ps" 2>/dev/null; sleep 0.05; done ) &
  sampler_pid=$!
}
sample_check() {  # sample_check NAME: the sandboxes seen hold no secret and only a compile's variables
  touch "$out/$1.stop"; wait "$sampler_pid" 2>/dev/null || true
  sampler_pid=
  local sandboxes names extra
  # This cluster's sandboxes (the machine may run others): bwrap with a server's build folder bound.
  grep -F -- "--bind $out/cluster/server105" "$out/$1.ps" >"$out/$1.sandboxes.ps" || true
  sandboxes=$(grep -c -- '--setenv' "$out/$1.sandboxes.ps" || true)
  [ "$sandboxes" -gt 0 ] || fail "$1: no build server's sandbox was seen (ps sampled too slowly?)"
  # The values on any command line (this script's own greps, which name the token, left out).
  grep -v '^grep ' "$out/$1.ps" >"$out/$1.others.ps" || true
  grep -qF "$token" "$out/$1.others.ps" && fail "$1: a process's command line holds the client token"
  grep -qF "$OPFORGE_TEST_CANARY" "$out/$1.others.ps" && fail "$1: the canary's value reached a command line"
  grep -q 'OPFORGE_SCHEDULER_TOKEN\|OPFORGE_TEST_CANARY' "$out/$1.sandboxes.ps" &&
    fail "$1: a build server's sandbox holds a variable no compile needs: $(grep -o -- '--setenv OPFORGE_[A-Z_]*' "$out/$1.sandboxes.ps" | sort -u | tr '\n' ' ')"
  # Every variable a sandbox got is one the settings table lets a compile have (docs/cluster.md),
  # or one of nvcc's own that its --dryrun sets for its steps (nvcc.profile's), or sccache's own
  # markers for them.
  names=$(grep -o -- '--setenv [A-Za-z_][A-Za-z0-9_]*' "$out/$1.sandboxes.ps" | awk '{print $2}' | sort -u)
  extra=$(printf '%s\n' $names | grep -vxE 'PATH|LD_LIBRARY_PATH|TMPDIR|LANG|LC_ALL|LC_CTYPE|LC_MESSAGES|SOURCE_DATE_EPOCH|CPATH|C_INCLUDE_PATH|CPLUS_INCLUDE_PATH|LIBRARY_PATH|NVCC_PREPEND_FLAGS|NVCC_APPEND_FLAGS|SCCACHE_SERVER_UDS|SCCACHE_CONF' |
    grep -vxE 'TOP|NVVMIR_LIBRARY_DIR|INCLUDES|SYSTEM_INCLUDES|LIBRARIES|CUDAFE_FLAGS|PTXAS_FLAGS|CICC_PATH|_HERE_|_THERE_|_TARGET_SIZE_|_TARGET_DIR_|_SPACE_|_CUDART_|_NVVM_BRANCH_' |
    grep -vxE 'SCCACHE_DIRECT|__SCCACHE_THIS_IS_A_CUDA_COMPILATION__' || true)
  [ -z "$extra" ] || fail "$1: the build servers got variables a compile does not need: $extra"
  rm -f "$out/$1.ps" "$out/$1.others.ps"  # large; the sandboxes' lines are kept
  echo "$1: $sandboxes sandbox command lines sampled, their variables: $(echo $names)"
}
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
# plan and doctor ask the scheduler what it has, and say what the build will do.
OPFORGE_SCHEDULER_TOKEN="$token" "$opforge" plan recipe.toml >plan.txt 2>&1 || { cat plan.txt; fail "plan"; }
grep -qx "  scheduler   2 build servers, 4 CPUs at http://127.0.0.1:$SCHED_PORT: compile steps go there" plan.txt ||
  { grep -A1 "^cache" plan.txt; fail "plan does not show the scheduler's servers"; }
OPFORGE_SCHEDULER_TOKEN="$token" "$opforge" doctor --recipe recipe.toml --json >doctor.json 2>&1 || true
/usr/bin/python3 -c 'import json,sys; s=json.load(open("doctor.json"))["scheduler"]; assert (s["state"], s["servers"], s["cpus"]) == ("connected", 2, 4), s' ||
  fail "doctor does not show the scheduler's servers"
grep -qF "$token" plan.txt doctor.json && fail "plan or doctor printed the client token"
sample_start remote
build remote
sample_check remote
# Four CPUs: four compiles at once, where this machine alone runs two.
grep -q "^sccache: 2 build servers, 4 CPUs at http://127.0.0.1:$SCHED_PORT: compile steps go there, 4 compiles at once (the servers' CPUs; -j N to choose)$" remote.txt ||
  fail "remote: the scheduler's servers are not named"
# The counters, not the exit code: steps ran on both servers... or at least on one.
grep -Eq "^sccache: [0-9]+ compile steps: [1-9][0-9]* on 127.0.0.1:1050[12]" remote.txt || fail "remote: no step compiled remotely"
/usr/bin/python3 - "$out"/remote/d/*.opforge-record.json <<'PY'
import json, sys
steps = json.load(open(sys.argv[1]))["inputs"]["compile_steps"]["sccache"]
assert sum(steps["build_servers"].values()) > 0, steps
print("remote: record:", steps)
PY

# A command build whose setup.py prints its whole environment, through the cluster, its C
# extension compiled on a build server through opforge's host wrappers. The token is in none of
# the files the build wrote (build folder, dist, record, logs, cache, sccache's own folder) and in
# no sandbox; setup.py saw the canary (so it printed what it had), and HOME stays as it was.
mkdir -p envdump/home
cp -r "$src/tests/fixtures/setuptools_project" envdump/src
sed -i 's/^import subprocess$/import subprocess\nfor _k, _v in sorted(os.environ.items()):\n    print(f"{_k}={_v}", flush=True)/' envdump/src/setup.py
grep -q '^for _k, _v in sorted' envdump/src/setup.py || fail "envdump: setup.py was not rewritten"
# A file that takes a moment to compile, so that its sandbox is there to be seen.
/usr/bin/python3 -c 'print("\n".join("int opforge_big_%d(int x) { return x * %d + %d; }" % (i, i, i) for i in range(6000)))' >envdump/src/csrc/big.c
sed -i 's|\["csrc/host.c"\]|["csrc/host.c", "csrc/big.c"]|' envdump/src/setup.py
# Its C extension only (DS_BUILD_DEMO_CUDA unset): a wheel without GPU code on purpose.
cat >envdump/src/opforge.toml <<TOML
[package]
name = "demo-ops"
version = "0.3.0"
local_version = "none"
[source]
path = "."
[arch]
list = "none"
[build]
backend = "command"
command = ["/usr/bin/python3", "setup.py", "bdist_wheel"]
cache = "sccache"
scheduler = "http://127.0.0.1:$SCHED_PORT"
TOML
sample_start envdump
(cd envdump/src && HOME="$out/envdump/home" OPFORGE_SCHEDULER_TOKEN="$token" OPFORGE_CACHE_DIR="$out/envdump/cache" \
  SCCACHE_DIR="$out/envdump/sccache" timeout 900 "$opforge" build opforge.toml --build-dir "$out/envdump/b" \
  --dist-dir "$out/envdump/d") >envdump.txt 2>&1 || { tail -30 envdump.txt; fail "envdump: the build failed"; }
sample_check envdump
grep -q "^OPFORGE_TEST_CANARY=$OPFORGE_TEST_CANARY$" envdump/b/command.log || fail "envdump: setup.py did not print its environment"
grep -q '^OPFORGE_SCHEDULER_TOKEN=' envdump/b/command.log && fail "envdump: the build command was given OPFORGE_SCHEDULER_TOKEN"
grep -rlF "$token" envdump.txt "$out/envdump" && fail "envdump: the client token was written out (files above)"
grep -Eq "^sccache: [0-9]+ compile steps: [1-9][0-9]* on 127.0.0.1:1050[12]" envdump.txt ||
  { grep "^sccache" envdump.txt; fail "envdump: no step compiled remotely"; }
[ -z "$(ls -A envdump/home)" ] || fail "envdump: the build wrote into HOME: $(ls -A envdump/home)"
echo "envdump: no token in $(find "$out/envdump" -type f | wc -l) files; setup.py printed $(grep -c = envdump/b/command.log) variables"

# sccache's own words: a configuration it cannot load is exit 2 with what sccache says; and a
# scheduler named only by SCCACHE_CONF is what the summary names, as the counters do.
printf 'this is [not toml\n' >bad-sccache.toml
sed '/^scheduler = /d' recipe.toml >own.toml
set +e
SCCACHE_CONF="$out/bad-sccache.toml" SCCACHE_DIR="$out/badconf/sccache" "$opforge" build own.toml \
  --build-dir "$out/badconf/b" --dist-dir "$out/badconf/d" >badconf.txt 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || { cat badconf.txt; fail "badconf: exit $rc, not 2"; }
grep -q "Failed to load config file" badconf.txt || { cat badconf.txt; fail "badconf: sccache's words are missing"; }
grep -q "hint: fix the configuration sccache reads" badconf.txt || { cat badconf.txt; fail "badconf: the hint does not fit"; }
grep -q "install sccache" badconf.txt && fail "badconf: blames a missing sccache"
printf '[dist]\nscheduler_url = "http://127.0.0.1:%s"\ntoolchains = []\nrewrite_includes_only = true\n[dist.auth]\ntype = "token"\ntoken = "%s"\n' \
  "$SCHED_PORT" "$token" >own-sccache.toml
SCCACHE_CONF="$out/own-sccache.toml" SCCACHE_DIR="$out/ownconf/sccache" timeout 900 "$opforge" build own.toml \
  --build-dir "$out/ownconf/b" --dist-dir "$out/ownconf/d" >ownconf.txt 2>&1 || { cat ownconf.txt; fail "ownconf: the build failed"; }
grep "^sccache: " ownconf.txt | sed "s/^/ownconf: /"
grep -q "^sccache: 2 build servers, 4 CPUs at http://127.0.0.1:$SCHED_PORT/ (sccache's own configuration; no \[build\] scheduler): compile steps go there" ownconf.txt ||
  fail "ownconf: the summary does not say the build servers SCCACHE_CONF names"

# A torch extension through the command backend (torch's BuildExtension and ninja, opforge's nvcc
# and host wrappers): a setup.py with its own architectures (replaced by the plan's) and no -O for
# nvcc (host code at -O0, where fully preprocessed text would compile to other bytes).
venv=${OPFORGE_TORCH214_VENV:-$HOME/.cache/opforge/torch214-venv}
if [ -x "$venv/bin/python" ]; then
  cp -r "$src/tests/fixtures/cuda_extension" ext
  sed -i 's|CUDAExtension("tinyscale._C", \[\(.*\)\])|CUDAExtension("tinyscale._C", [\1], extra_compile_args={"nvcc": ["-gencode", "arch=compute_75,code=sm_75", "-arch=sm_86"]})|' ext/setup.py
  grep -q 'arch=compute_75' ext/setup.py || fail "the extension's setup.py was not rewritten"
  sed -i "s|^command = .*|command = [\"$venv/bin/python\", \"setup.py\", \"bdist_wheel\"]|" ext/opforge.toml
  printf '\n[cuda]\nversion = "torch"\npython = "%s"\n' "$venv/bin/python" >>ext/opforge.toml
  ext_build() {  # ext_build NAME [SCHEDULER]: the extension, through sccache and the scheduler when given
    sed '/^cache = /d; /^scheduler = /d' ext/opforge.toml >ext/opforge.tmp && mv ext/opforge.tmp ext/opforge.toml
    if [ -n "${2:-}" ]; then
      sed -i "s|^backend = \"command\"|backend = \"command\"\ncache = \"sccache\"\nscheduler = \"$2\"|" ext/opforge.toml
    fi
    (cd ext && OPFORGE_SCHEDULER_TOKEN="$token" OPFORGE_CACHE_DIR="$out/ext-cache" SCCACHE_DIR="$out/$1/sccache" \
      CUDA_HOME= timeout 900 "$opforge" build opforge.toml --build-dir "$out/$1/b" --dist-dir "$out/$1/d") >"$1.txt" 2>&1 ||
      { tail -30 "$1.txt"; fail "$1: the build failed"; }
  }
  ext_build ext_local
  ext_build ext_remote "http://127.0.0.1:$SCHED_PORT"
  grep "^sccache: \|^GPU code: " ext_remote.txt | sed "s/^/ext_remote: /"
  grep -Eq "^sccache: [0-9]+ compile steps: [1-9][0-9]* on 127.0.0.1:1050[12]" ext_remote.txt ||
    fail "ext_remote: no step compiled remotely"
  grep -q "^GPU code: sm_90; the project asked for sm_75 sm_86 compute_86 (3), replaced by the plan's 9.0" ext_remote.txt ||
    fail "ext_remote: the project's architectures were not replaced"
  [ "$(sha256sum <"$(ls "$out"/ext_local/d/*.whl)")" = "$(sha256sum <"$(ls "$out"/ext_remote/d/*.whl)")" ] ||
    fail "ext_remote: the wheel differs from the build without a cache"
  grep -rqF "$token" ext_remote.txt "$out/ext_remote" && fail "ext_remote: the client token was written out"
  echo "ext_remote: the same bytes as ext_local"
elif [ "${CI:-}" = "true" ]; then
  fail "the torch 2.14 environment ($venv) is missing: run scripts/torch-venv"
else
  echo "no torch 2.14 environment ($venv): the torch extension part is left out"
fi

# The servers killed while the build runs (after its first object): the steps sent to them, and
# those the scheduler still gives them, compile here; the build finishes with the same bytes.
OPFORGE_SCHEDULER_TOKEN="$token" SCCACHE_DIR="$out/mid_build/sccache" timeout 900 "$opforge" build recipe.toml \
  --build-dir "$out/mid_build/b" --dist-dir "$out/mid_build/d" >mid_build.txt 2>&1 &
pid=$!
for _ in $(seq 600); do
  [ -n "$(find "$out/mid_build/b/obj" -name '*.o' 2>/dev/null | head -1)" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
"$cluster" stop-servers "$out/cluster"
wait "$pid" || { cat mid_build.txt; fail "mid_build: the build failed"; }
[ "$(sha256sum "$out"/mid_build/d/*.whl | cut -d' ' -f1)" = "$want_sha" ] ||
  { cat mid_build.txt; fail "mid_build: the wheel differs from the build without a cache"; }
grep "^sccache: " mid_build.txt | sed "s/^/mid_build: /"
"$cluster" servers "$out/cluster"

build bad_token wrong-token
grep -q "^sccache: a test compile did not run on a build server (.*401.*) at http://127.0.0.1:$SCHED_PORT: every step compiles here$" bad_token.txt ||
  fail "bad_token: not said"
# Servers that cannot take the toolchain (a toolchain cache of 1 KiB, as a full disk would): the
# upload fails, the steps compile here, and the build says so.
"$cluster" stop-servers "$out/cluster"
rm -rf "$out"/cluster/server105*/toolchains
TOOLCHAIN_CACHE_SIZE=1024 "$cluster" servers "$out/cluster"
build toolchain_refused
grep -q "^sccache: .*every step compiles here$" toolchain_refused.txt || fail "toolchain_refused: not said"
"$cluster" stop-servers "$out/cluster"
build servers_killed
grep -q "^sccache: .*: every step compiles here$" servers_killed.txt || fail "servers_killed: not said"
"$cluster" stop "$out/cluster"
build scheduler_down
OPFORGE_SCHEDULER_TOKEN="$token" "$opforge" plan recipe.toml >plan_down.txt 2>&1 || { cat plan_down.txt; fail "plan"; }
grep -q "^  scheduler   the scheduler cannot be reached (.*) at http://127.0.0.1:$SCHED_PORT: every step compiles here$" plan_down.txt ||
  { grep -A1 "^cache" plan_down.txt; fail "plan does not say the scheduler is down"; }
grep -q "^sccache: the scheduler cannot be reached (.*) at http://127.0.0.1:$SCHED_PORT: every step compiles here$" \
  scheduler_down.txt || fail "scheduler_down: not said"
"$cluster" start "$out/cluster" 0
token=$(cat "$out/cluster/token")
build no_servers
grep -q "^sccache: the scheduler has no build server at http://127.0.0.1:$SCHED_PORT: every step compiles here$" \
  no_servers.txt || fail "no_servers: not said"
"$cluster" stop "$out/cluster"
# Something at the scheduler's address that is not one: it answers garbage, or it takes the
# connection and never answers. Each build finishes here and says why.
fake() {  # fake garbage|silent: a listener on the scheduler's port, in the background
  /usr/bin/python3 - "$SCHED_PORT" "$1" <<'PY' &
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
held = []
while True:
    c, _ = s.accept()
    if sys.argv[2] == "garbage":
        c.recv(65536)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n\x00\xffgarbage")
        c.close()
    else:
        held.append(c)  # read nothing, answer nothing
PY
  fake_pid=$!
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$SCHED_PORT") 2>/dev/null && return 0; sleep 0.1; done
  fail "the fake scheduler did not listen"
}
fake garbage
build garbage
kill "$fake_pid"; wait "$fake_pid" 2>/dev/null || true
grep -q "^sccache: .* at http://127.0.0.1:$SCHED_PORT: every step compiles here$" garbage.txt || fail "garbage: not said"
fake silent
t0=$(date +%s)
build silent
kill "$fake_pid"; wait "$fake_pid" 2>/dev/null || true
grep -q "^sccache: .* at http://127.0.0.1:$SCHED_PORT: every step compiles here$" silent.txt || fail "silent: not said"
echo "silent: the build took $(( $(date +%s) - t0 )) s"
# Nothing of the builds' sccache left: no client server, no private folder.
left=$(pgrep -a -f "$tools/bin/sccache" | grep -v defunct || true)
[ -z "$left" ] || fail "left running: $left"
echo "sccache_dist: remote steps on the build servers, every fault compiled here, the same bytes ($want_sha)"
