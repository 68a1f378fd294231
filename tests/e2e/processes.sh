#!/usr/bin/env bash
# Nothing opforge starts outlives it, and Ctrl-Z stops everything it started:
# 1. a compiler that ignores SIGTERM (in a process group of its own, as ninja puts every job) is
#    gone, checked by PID, after opforge is ended by SIGTERM or SIGKILL;
# 2. Ctrl-Z in a pseudo-terminal (an interactive bash's job control) stops every process of the
#    build and no compile progresses while it is stopped; `fg` finishes the build.
# About 20 s; one tiny CPU op, compiled by g++ through wrapper scripts first on PATH.
set -euo pipefail
opforge=$1 src=$2 work=$3
. "$src/tests/e2e/lib.sh"
set -m
rm -rf "$work"; mkdir -p "$work/tree/ops/tiny" "$work/bin"
export OPFORGE_CACHE_DIR="$work/cache"
cat > "$work/r.toml" <<'TOML'
[source]
path = "tree"
ops_dir = "ops"
TOML
printf 'name = "tiny"\nkind = "cpu"\nsources = ["a.cpp"]\n' > "$work/tree/ops/tiny/op.toml"
echo 'extern "C" int tiny() { return 1; }' > "$work/tree/ops/tiny/a.cpp"

# compiler MODE: c++/g++ wrappers; a compile (-c) behaves as MODE says, the rest is the real g++.
compiler() {
  for name in c++ g++; do
    cat > "$work/bin/$name" <<SH
#!/usr/bin/env bash
case " \$* " in *" -c "*) ;; *) exec /usr/bin/g++ "\$@" ;; esac
$1
exec /usr/bin/g++ "\$@"
SH
    chmod +x "$work/bin/$name"
  done
}
survivors() { pgrep -f opforge-test-stubborn || true; }

# --- 1. a compiler that ignores SIGTERM
compiler "trap '' TERM INT HUP; exec -a opforge-test-stubborn-\$\$ sleep 600"
for sig in TERM KILL; do
  rm -rf "$work/build" "$work/dist"
  PATH="$work/bin:$PATH" "$opforge" build "$work/r.toml" -j1 >"$work/$sig.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do [ -n "$(survivors)" ] && break; sleep 0.05; done
  [ -n "$(survivors)" ] || { cat "$work/$sig.log"; fail "the stubborn compile never started"; }
  stubborn=$(survivors)
  kill -$sig $pid  # opforge alone, as a crash or `kill PID` would end it
  wait $pid 2>/dev/null || true
  for _ in $(seq 1 100); do [ -z "$(survivors)" ] && break; sleep 0.1; done
  left=$(survivors)
  [ -z "$left" ] || { ps -o pid,ppid,pgid,stat,args -p "$left" || true; fail "SIG$sig: compile PID(s) $left outlived opforge"; }
  echo "SIG$sig: the compile that ignores SIGTERM (PID $stubborn) ended with opforge"
done

# --- 2. Ctrl-Z in a pseudo-terminal
# Each compile appends a tick every 0.1 s for 4 s, then compiles: while stopped, no tick.
compiler "for i in \$(seq 1 40); do echo tick >> '$work/ticks'; sleep 0.1; done"
rm -rf "$work/build" "$work/dist" "$work/ticks" "$work/rc"
export OPFORGE PATH_FOR_BUILD="$work/bin:$PATH"
OPFORGE=$opforge WORK=$work python3 - <<'PY'
import os, pty, select, sys, time

work, opforge = os.environ["WORK"], os.environ["OPFORGE"]
pid, fd = pty.fork()
if pid == 0:
    os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])

out = bytearray()
def pump(seconds):
    end = time.time() + seconds
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                out.extend(os.read(fd, 65536))
            except OSError:
                return
def ticks():
    try:
        return sum(1 for _ in open(f"{work}/ticks"))
    except FileNotFoundError:
        return 0
def fail(msg):
    sys.stderr.write(out.decode(errors="replace")[-4000:] + f"\nFAIL: {msg}\n")
    sys.exit(1)
def tree_states(root):
    """The state letter of every process below `root` (pid -> state), and parent of each."""
    parent = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                stat = open(f"/proc/{p}/stat").read()
            except OSError:
                continue
            rest = stat[stat.rindex(")") + 2:].split()
            parent[int(p)] = (int(rest[1]), rest[0])
    found, grew = {}, True
    while grew:
        grew = False
        for p, (pp, st) in parent.items():
            if p not in found and (pp == root or pp in found):
                found[p] = st
                grew = True
    return found, parent

pump(1)
os.write(fd, (f"sh -c 'PATH=\"$PATH_FOR_BUILD\" \"$OPFORGE\" build {work}/r.toml -j1 > {work}/ctrlz.log 2>&1;"
              f" echo $? > {work}/rc'\n").encode())
for _ in range(600):
    pump(0.05)
    if ticks() > 0:
        break
else:
    fail("the compile never started")
os.write(fd, b"\x1a")  # Ctrl-Z: the terminal sends SIGTSTP to the foreground job
pump(1.0)
before = ticks()
states, parent = tree_states(pid)
# The job (sh, opforge) stops as any job does; each of opforge's watchdogs (its children) waits
# in sigwaitinfo and stays awake to pass SIGCONT on; every process below a watchdog must stop.
def exe(p):
    try:
        return os.readlink(f"/proc/{p}/exe")
    except OSError:
        return ""
binary = os.path.realpath(opforge)
main = {p for p in states if exe(p) == binary and exe(parent[p][0]) != binary}
watchdogs = {p for p in states if exe(p) == binary and parent[p][0] in main}
running = {p: s for p, s in states.items() if s not in "TtZ" and p not in watchdogs}
if not watchdogs:
    fail("no watchdog found below opforge")
if running:
    os.system("ps -o pid,ppid,pgid,stat,args --forest -g $(ps -o sid= -p %d)" % pid)
    fail(f"processes still running after Ctrl-Z: {running}")
pump(3.0)
if ticks() != before:
    fail(f"a compile progressed while stopped ({before} -> {ticks()} ticks)")
print(f"Ctrl-Z: {len(states)} processes stopped, no tick in 3 s ({before} ticks)")
os.write(fd, b"fg\n")
for _ in range(1200):
    pump(0.1)
    if os.path.exists(f"{work}/rc") and open(f"{work}/rc").read().strip():
        break
else:
    fail("the build did not finish after fg")
rc = open(f"{work}/rc").read().strip()
if rc != "0":
    sys.stderr.write(open(f"{work}/ctrlz.log").read())
    fail(f"the build after fg exited {rc}")
if ticks() < 40:
    fail(f"the compile did not run to its end after fg ({ticks()} ticks)")
os.write(fd, b"exit\n")
pump(0.5)
PY
ls "$work/dist"/*.whl >/dev/null || fail "no wheel after fg"
echo "PASS"
