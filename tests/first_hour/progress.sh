#!/usr/bin/env bash
# Live progress: a fake slow compiler (g++ that waits, then compiles) must be named as running while
# it runs, on a terminal (a pseudo-terminal made by `script`: one redrawn line) and in a pipe (a line
# as each step starts and as it ends, with its seconds). No wall-clock bound, so a loaded machine
# cannot fail it: the test holds the clock. Each compile, once started, waits at least 3 s and then
# until the test has read the line that names it as running (a file release.<source>, made by the
# reader of the output; on a terminal once that line has been redrawn with a later time); a
# compile never released gives up after a minute and is logged so, and fails the test. Every output
# line is timestamped as it arrives; the compiler writes its own start and end times.
# usage: progress.sh OPFORGE_BINARY WORK_DIR
set -euo pipefail
OPFORGE=$(realpath "$1") WORK=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/slow_op.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$WORK"; mkdir -p "$WORK"; WORK=$(realpath "$WORK")
export OPFORGE_CACHE_DIR=$WORK/cache
for v in $(env | grep -o '^DS_BUILD_[A-Z0-9_]*' || true); do unset "$v"; done
unset NINJA_STATUS

# The slow compilers: gcc/g++ first on PATH (the default compiler), quick for version questions.
# While $WORK/hold exists a compile (-c) is held as above; it logs "START SOURCE HOW END", HOW being
# released, gave-up (no release within a minute: the others then give up at once) or free.
mkdir -p "$WORK/bin"
for c in gcc g++; do
  cat > "$WORK/bin/$c" <<SH
#!/bin/sh
case " \$* " in *" -c "*)
  for a; do case "\$a" in -*) ;; *.cpp) src=\$(basename -- "\$a");; esac; done
  start=\$(date +%s.%N) how=free
  if [ -e "$WORK/hold" ]; then
    sleep 3
    deadline=\$((\$(date +%s) + 60))
    while [ ! -e "$WORK/release.\$src" ] && [ ! -e "$WORK/gave-up" ] && [ \$(date +%s) -lt \$deadline ]; do
      sleep 0.1
    done
    if [ -e "$WORK/release.\$src" ]; then how=released; else how=gave-up; : > "$WORK/gave-up"; fi
  fi
  echo "\$start \$src \$how \$(date +%s.%N)" >> "$WORK/starts.log";;
esac
exec /usr/bin/$c "\$@"
SH
  chmod +x "$WORK/bin/$c"
done
export PATH=$WORK/bin:$PATH
slow_op_tree "$WORK/tree"
# A user's own NINJA_STATUS must not break the counting.
export NINJA_STATUS='%e %p '

# Each chunk of output with the time it arrived: split at \r and \n, and after an erase-to-end-of-
# line (a redrawn line is complete when it is drawn, not when the next one replaces it). With MODE
# (pipe or tty) it also releases each held compile once it has read the line naming it as running:
# in a pipe its "started" line; on a terminal its status line, drawn with two different times.
stamp() {
  python3 -u -c '
import os, sys, time
mode, work = (sys.argv[1], sys.argv[2]) if len(sys.argv) > 2 else (None, None)
drawn = {}  # on a terminal: the times the running line of each source was drawn with
def release(src):
    open(os.path.join(work, "release." + src), "a").close()
def seen(text):
    for src in ("a.cpp", "b.cpp"):
        name = "slow/" + src
        if name not in text: continue
        if mode == "pipe" and "started" in text:
            release(src)
        elif mode == "tty" and "(0:" in text:
            drawn.setdefault(src, set()).add(text.split(name)[1][:7])
            if len(drawn[src]) >= 2: release(src)
buf = b""
while True:
    b = os.read(0, 4096)
    if not b: break
    buf += b
    while True:
        el = buf.find(b"\x1b[K")
        cut = min([i for i in (buf.find(b"\r"), buf.find(b"\n"), el) if i >= 0], default=-1)
        if cut < 0: break
        seg, buf = buf[:cut], buf[cut + (3 if cut == el else 1):]
        if seg.strip():
            text = seg.decode(errors="replace")
            print("%.3f %s" % (time.time(), text), flush=True)
            if mode: seen(text)
if buf.strip(): print("%.3f %s" % (time.time(), buf.decode(errors="replace")), flush=True)
' "$@"
}
# hold: the next builds' compiles are held until released.
hold() { rm -f "$WORK"/release.* "$WORK/gave-up"; : > "$WORK/starts.log"; : > "$WORK/hold"; }

# check_named_while_running LOG MODE: each compile was released (named as running while it ran, so
# before it ended); in a pipe its finished line came after it ended, with at least the seconds from
# its started line's arrival to its end (opforge saw the start no later, and the end no earlier);
# on a terminal its line was redrawn while it ran. How long after its start it was named is printed.
check_named_while_running() {
  local log=$1 mode=$2
  python3 - "$WORK/starts.log" "$log" "$mode" <<'PY' || exit 1
import sys
starts = [l.split() for l in open(sys.argv[1]) if l.strip()]
lines = [l.rstrip("\n").split(" ", 1) for l in open(sys.argv[2]) if " " in l]
mode = sys.argv[3]
assert len(starts) == 2, starts
for t0, src, how, t1 in starts:
    t0, t1 = float(t0), float(t1)
    if mode == "pipe":
        hits = [float(t) for t, s in lines if "started" in s and "slow/" + src in s]
    else:
        hits = [float(t) for t, s in lines if "slow/" + src in s and "(0:" in s]
    print(mode, src, how, "named", ["%.2f" % (t - t0) for t in hits[:3]], "s after its start; it ran %.2f s" % (t1 - t0))
    assert how == "released", (mode, src, "not named as running while it ran", how)
    assert hits and min(hits) < t1, (mode, src, "named only after it ended", hits, t1)
    if mode == "pipe":
        ends = [(float(t), s) for t, s in lines if "finished" in s and "slow/" + src in s]
        assert ends, ("no finished line", src)
        assert ends[0][0] >= t1, ("finished before the compile ended", ends, t1)
        secs = float(ends[0][1].rsplit("(", 1)[1].split(" s)")[0])
        # Less 0.1 s: the one-decimal rounding, and opforge's clock against this one.
        assert secs >= t1 - min(hits) - 0.1, ("its seconds", ends[0][1], "it ran %.2f s after it was named" % (t1 - min(hits)))
    else:
        # The running line is redrawn while it runs: its seconds count up.
        ticks = {s.split("slow/" + src)[1][:7] for t, s in lines if "slow/" + src in s and float(t) < t1}
        assert len(ticks) >= 2, ("not redrawn while running", ticks)
PY
}

# 1. In a pipe: a line as each step starts and as it ends.
slow_recipe "$WORK/pipe.toml" "$WORK/tree" '[build]' 'build_dir = "build-pipe"' 'dist_dir = "dist-pipe"'
hold
"$OPFORGE" build "$WORK/pipe.toml" -j 1 2>&1 | tee "$WORK/pipe.raw" | stamp pipe "$WORK" > "$WORK/pipe.log" || true
cat "$WORK/pipe.log"
ls "$WORK"/dist-pipe/*.whl > /dev/null || fail "the pipe build made no wheel"
grep -q '\[0/4\] started  c++ slow/' "$WORK/pipe.log" || fail "no started line with done/total"
check_named_while_running "$WORK/pipe.log" pipe
grep -q $'\r\|\x1b' "$WORK/pipe.raw" && fail "a pipe got a redrawn line or an escape sequence"

# 2. On a terminal: one line, redrawn, naming the running step with its time.
slow_recipe "$WORK/tty.toml" "$WORK/tree" '[build]' 'build_dir = "build-tty"' 'dist_dir = "dist-tty"'
hold
TERM=xterm script -qfec "'$OPFORGE' build '$WORK/tty.toml' -j 1" /dev/null < /dev/null | tee "$WORK/tty.raw" \
  | stamp tty "$WORK" > "$WORK/tty.log" || true
cat "$WORK/tty.log"
ls "$WORK"/dist-tty/*.whl > /dev/null || fail "the terminal build made no wheel"
check_named_while_running "$WORK/tty.log" tty
grep -q 'started' "$WORK/tty.log" && fail "a terminal got the pipe's lines"
grep -q $'\x1b\[K' "$WORK/tty.raw" || fail "a terminal's line was not redrawn in place"

# 3. TERM=dumb on a terminal, and --quiet: lines as in a pipe; nothing but the result.
rm -f "$WORK/hold"
slow_recipe "$WORK/dumb.toml" "$WORK/tree" '[build]' 'build_dir = "build-dumb"' 'dist_dir = "dist-dumb"'
TERM=dumb script -qfec "'$OPFORGE' build '$WORK/dumb.toml' -j 2" /dev/null < /dev/null > "$WORK/dumb.log" || true
grep -q 'started  c++ slow/a.cpp' "$WORK/dumb.log" || fail "TERM=dumb did not get a line per step"
grep -q $'\x1b\[K' "$WORK/dumb.log" && fail "TERM=dumb got a redrawn line"
rm -rf "$WORK/build-dumb" "$WORK/dist-dumb"
"$OPFORGE" build "$WORK/dumb.toml" -j 2 --quiet > "$WORK/quiet.log" 2>&1 || fail "--quiet build failed"
grep -q 'slow/' "$WORK/quiet.log" && fail "--quiet printed steps"
grep -q '^wheel: ' "$WORK/quiet.log" || fail "--quiet left out the result"
echo "progress: ok"
