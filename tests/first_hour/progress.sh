#!/usr/bin/env bash
# Live progress: a fake slow compiler (g++ that sleeps 3 s, then compiles) must be named as running
# within a second of its start, on a terminal (a pseudo-terminal made by `script`: one redrawn
# line) and in a pipe (a line as each step starts and as it ends, with its seconds). Every output
# line is timestamped as it arrives; the compiler writes its own start time.
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
mkdir -p "$WORK/bin"
for c in gcc g++; do
  cat > "$WORK/bin/$c" <<SH
#!/bin/sh
case " \$* " in *" -c "*)
  for a; do case "\$a" in -*) ;; *.cpp) src=\$(basename -- "\$a");; esac; done
  echo "\$(date +%s.%N) \$src" >> "$WORK/starts.log"
  sleep 3;;
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
# line (a redrawn line is complete when it is drawn, not when the next one replaces it).
stamp() {
  python3 -u -c '
import os, sys, time
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
        if seg.strip(): print("%.3f %s" % (time.time(), seg.decode(errors="replace")), flush=True)
if buf.strip(): print("%.3f %s" % (time.time(), buf.decode(errors="replace")), flush=True)
'
}

# check LOG PATTERN_FOR_SOURCE: a line naming each compile as running within 1 s of its start.
check_named_in_time() {
  local log=$1 mode=$2
  python3 - "$WORK/starts.log" "$log" "$mode" <<'PY' || exit 1
import sys
starts = [l.split() for l in open(sys.argv[1]) if l.strip()]
lines = [l.rstrip("\n").split(" ", 1) for l in open(sys.argv[2]) if " " in l]
mode = sys.argv[3]
assert len(starts) == 2, starts
for t0, src in starts:
    t0 = float(t0)
    if mode == "pipe":
        hits = [float(t) for t, s in lines if "started" in s and "slow/" + src in s]
    else:
        hits = [float(t) for t, s in lines if "slow/" + src in s and "(0:0" in s]
    late = [t - t0 for t in hits]
    print(mode, src, "named", ["%.2f" % d for d in late], "s after its start")
    assert any(-1.0 <= d <= 1.0 for d in late), (mode, src, "not named within 1 s of its start", late)
    if mode == "pipe":
        ends = [(float(t), s) for t, s in lines if "finished" in s and "slow/" + src in s]
        assert ends, ("no finished line", src)
        assert float(ends[0][0]) - t0 >= 2.5, ("finished too early", ends)
        secs = float(ends[0][1].rsplit("(", 1)[1].split(" s)")[0])
        assert secs >= 2.9, ("its seconds", ends[0][1])
    else:
        # The running line is redrawn while it runs: its seconds count up.
        ticks = {s.split("slow/" + src)[1][:7] for t, s in lines if "slow/" + src in s}
        assert len(ticks) >= 2, ("not redrawn while running", ticks)
PY
}

# 1. In a pipe: a line as each step starts and as it ends.
slow_recipe "$WORK/pipe.toml" "$WORK/tree" '[build]' 'build_dir = "build-pipe"' 'dist_dir = "dist-pipe"'
: > "$WORK/starts.log"
"$OPFORGE" build "$WORK/pipe.toml" -j 1 2>&1 | tee "$WORK/pipe.raw" | stamp > "$WORK/pipe.log" || true
cat "$WORK/pipe.log"
ls "$WORK"/dist-pipe/*.whl > /dev/null || fail "the pipe build made no wheel"
grep -q '\[0/4\] started  c++ slow/' "$WORK/pipe.log" || fail "no started line with done/total"
check_named_in_time "$WORK/pipe.log" pipe
grep -q $'\r\|\x1b' "$WORK/pipe.raw" && fail "a pipe got a redrawn line or an escape sequence"

# 2. On a terminal: one line, redrawn, naming the running step with its time.
slow_recipe "$WORK/tty.toml" "$WORK/tree" '[build]' 'build_dir = "build-tty"' 'dist_dir = "dist-tty"'
: > "$WORK/starts.log"
TERM=xterm script -qfec "'$OPFORGE' build '$WORK/tty.toml' -j 1" /dev/null < /dev/null | tee "$WORK/tty.raw" \
  | stamp > "$WORK/tty.log" || true
cat "$WORK/tty.log"
ls "$WORK"/dist-tty/*.whl > /dev/null || fail "the terminal build made no wheel"
check_named_in_time "$WORK/tty.log" tty
grep -q 'started' "$WORK/tty.log" && fail "a terminal got the pipe's lines"
grep -q $'\x1b\[K' "$WORK/tty.raw" || fail "a terminal's line was not redrawn in place"

# 3. TERM=dumb on a terminal, and --quiet: lines as in a pipe; nothing but the result.
slow_recipe "$WORK/dumb.toml" "$WORK/tree" '[build]' 'build_dir = "build-dumb"' 'dist_dir = "dist-dumb"'
TERM=dumb script -qfec "'$OPFORGE' build '$WORK/dumb.toml' -j 2" /dev/null < /dev/null > "$WORK/dumb.log" || true
grep -q 'started  c++ slow/a.cpp' "$WORK/dumb.log" || fail "TERM=dumb did not get a line per step"
grep -q $'\x1b\[K' "$WORK/dumb.log" && fail "TERM=dumb got a redrawn line"
rm -rf "$WORK/build-dumb" "$WORK/dist-dumb"
"$OPFORGE" build "$WORK/dumb.toml" -j 2 --quiet > "$WORK/quiet.log" 2>&1 || fail "--quiet build failed"
grep -q 'slow/' "$WORK/quiet.log" && fail "--quiet printed steps"
grep -q '^wheel: ' "$WORK/quiet.log" || fail "--quiet left out the result"
echo "progress: ok"
