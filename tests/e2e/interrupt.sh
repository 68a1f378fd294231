#!/usr/bin/env bash
# SIGINT and SIGKILL during compilation leave no partial wheel or record; the next build succeeds.
# Two builds at once on one build folder: the second fails at once with a clear message.
set -euo pipefail
opforge=$1 src=$2 work=$3
. "$src/tests/e2e/lib.sh"
# Job control: background builds get their own process group and do not ignore SIGINT, so the
# signal reaches opforge, ninja and the compilers together, as Ctrl-C in a terminal does.
set -m
rm -rf "$work"; mkdir -p "$work"
copy_tree "$src" "$work/src"
export TORCH_CUDA_ARCH_LIST="9.0" OPFORGE_CACHE_DIR="$work/cache"
start() {  # start LOG: a build in the background, returns once compilation has begun
  rm -rf "$work/build"
  "$opforge" build "$work/src/recipes/default.toml" --build-dir "$work/build" --dist-dir "$work/dist" -j1 > "$1" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do grep -q '^\[1/' "$1" 2>/dev/null && return 0; sleep 0.05; done
  fail "the build never started compiling"
}
for sig in INT KILL; do
  start "$work/$sig.log"
  kill -$sig -- -$pid; wait $pid 2>/dev/null || true
  sleep 1
  ls "$work/dist"/* 2>/dev/null && fail "SIG$sig left files in dist/"
  echo "SIG$sig: dist/ is empty"
done
# The lock: a second build on the same folder while the first compiles.
start "$work/first.log"
set +e; out=$("$opforge" build "$work/src/recipes/default.toml" --build-dir "$work/build" --dist-dir "$work/dist2" 2>&1); rc=$?; set -e
echo "$out"
[ $rc -ne 0 ] || fail "the second concurrent build did not stop"
grep -q "another opforge build is running" <<<"$out" || fail "unclear message"
wait $pid || fail "the first build failed"
ls "$work/dist"/*.whl >/dev/null || fail "the next build after interruptions made no wheel"
[ -z "$(ls "$work/dist2" 2>/dev/null)" ] || fail "the refused build wrote to dist"
echo "PASS"
