#!/usr/bin/env bash
# Two builds of different recipes (two build folders, so two build locks) share one dist/. The
# first is stopped inside its commit, with its wheel and record staged under hidden names
# (OPFORGE_TEST_PAUSE_AT, test-only); the second, started then, must wait for dist/'s lock:
# neither its recovery of interrupted commits nor its own commit may touch the first build's
# staged files. Once the first goes on, both finish and dist/ holds both consistent pairs.
set -euo pipefail
opforge=$1 src=$2 work=$3
. "$src/tests/e2e/lib.sh"
rm -rf "$work"; mkdir -p "$work/ops"
cp -r "$src/tests/fixtures/ops/cpuop" "$work/ops/"
for r in alpha beta; do
  cat > "$work/$r.toml" <<TOML
[package]
name = "shared-$r"
version = "1.0.0"
local_version = "none"
[source]
path = "$work"
ops_dir = "ops"
[cuda]
version = "auto"
[ops]
cpuop = true
TOML
done
export SOURCE_DATE_EPOCH=1700000000 OPFORGE_CACHE_DIR="$work/cache"
args() { echo build "$work/$1.toml" --build-dir "$work/b-$1" --dist-dir "$work/dist" -j1; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
recorded_sha() {
  /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["outputs"][r["wheel"]])' "$1"
}
state() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null || echo gone; }
pids=()
cleanup() { for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill -KILL "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# Started directly (no shell function): $! is opforge itself, whose state /proc shows.
OPFORGE_TEST_PAUSE_AT=wheel-written "$opforge" $(args alpha) > "$work/alpha.log" 2>&1 &
alpha=$!; pids+=("$alpha")
for _ in $(seq 1 1200); do [ "$(state $alpha)" = T ] && break; [ "$(state $alpha)" = gone ] && break; sleep 0.1; done
[ "$(state $alpha)" = T ] || { cat "$work/alpha.log"; fail "the first build never reached its commit"; }
staged=$(ls -A "$work/dist" | grep -c 'opforge-new$' || true)
[ "$staged" -eq 2 ] || fail "expected the staged wheel and record in dist/, found: $(ls -A "$work/dist")"

"$opforge" $(args beta) > "$work/beta.log" 2>&1 &
beta=$!; pids+=("$beta")
for _ in $(seq 1 1200); do grep -q "waiting for another build's commit" "$work/beta.log" && break; [ "$(state $beta)" = gone ] && break; sleep 0.1; done
grep -q "waiting for another build's commit into $work/dist" "$work/beta.log" || { cat "$work/beta.log"; fail "the second build did not wait for dist/"; }
sleep 1
[ "$(ls -A "$work/dist" | grep -c 'opforge-new$' || true)" -eq 2 ] || fail "the second build touched the first one's staged files: $(ls -A "$work/dist")"
[ -z "$(ls "$work/dist" | grep '\.whl$' || true)" ] || fail "a wheel was committed while the first commit was stopped"
echo "second build waits while the first is inside its commit"

kill -CONT "$alpha"
wait "$alpha" || { cat "$work/alpha.log"; fail "the first build failed after SIGCONT"; }
wait "$beta" || { cat "$work/beta.log"; fail "the second build failed"; }
pids=()
n=0
for whl in "$work"/dist/*.whl; do
  n=$((n + 1))
  [ "$(recorded_sha "$whl.opforge-record.json")" = "$(sha "$whl")" ] || fail "$(basename "$whl"): its record does not describe it"
done
[ "$n" -eq 2 ] || fail "dist/ holds $n wheels, expected 2: $(ls -A "$work/dist")"
left=$(ls -A "$work/dist" | grep '^\.' | grep -v '^\.opforge-dist\.lock$' || true)
[ -z "$left" ] || fail "hidden files left in dist/: $left"
echo "PASS: both wheels and records committed, nothing staged left"
