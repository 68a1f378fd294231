#!/usr/bin/env bash
# SIGKILL at the dangerous moments of a build that replaces a wheel of the same name: during
# compilation (opforge alone is killed: its compilers must die with it), after the new wheel and
# record are written under hidden names, after the old record is moved aside, between the wheel's
# and the record's renames, and after the record's. After each kill dist/ never holds a record
# that does not describe the wheel beside it; the next build finishes or undoes the interrupted
# commit, leaves no temporary behind, and gives the same sha256 as an uninterrupted build.
# The kills at exact points use OPFORGE_TEST_STOP_AT (test-only fault injection).
set -euo pipefail
opforge=$1 src=$2 work=$3
. "$src/tests/e2e/lib.sh"
rm -rf "$work"; mkdir -p "$work/ops/twice"
# A CPU op and a small CUDA op: nvcc keeps the compile step long enough to be killed inside it.
cp -r "$src/tests/fixtures/ops/cpuop" "$work/ops/"
cat > "$work/ops/twice/op.toml" <<EOF
name = "twice"
kind = "cuda"
description = "two small kernels"
sources = ["a.cu", "b.cu"]
EOF
printf '__global__ void twice_a(float* x) { x[threadIdx.x] *= 2.f; }\n' > "$work/ops/twice/a.cu"
printf '__global__ void twice_b(float* x) { x[threadIdx.x] += 1.f; }\n' > "$work/ops/twice/b.cu"
cat > "$work/r.toml" <<EOF
[package]
name = "kill-points"
version = "1.0.0"
local_version = "none"
[source]
path = "$work"
ops_dir = "ops"
[cuda]
version = "auto"
[ops]
cpuop = true
twice = true
EOF
export TORCH_CUDA_ARCH_LIST="9.0" OPFORGE_CACHE_DIR="$work/cache"
A=1700000000 B=1700000100
build() {  # build EPOCH BUILD_DIR DIST [env...]
  local epoch=$1 bdir=$2 dist=$3; shift 3
  env SOURCE_DATE_EPOCH="$epoch" "$@" "$opforge" build "$work/r.toml" --build-dir "$bdir" --dist-dir "$dist" -j1
}
sha() { sha256sum "$1" | cut -d' ' -f1; }
recorded_sha() {  # recorded_sha RECORD: the sha256 the record holds for its wheel
  /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["outputs"][r["wheel"]])' "$1"
}
no_mismatched_record() {  # every record in DIST describes the wheel beside it
  for rec in "$1"/*.opforge-record.json; do
    [ -e "$rec" ] || continue
    whl=${rec%.opforge-record.json}
    [ -f "$whl" ] || fail "$rec has no wheel"
    [ "$(recorded_sha "$rec")" = "$(sha "$whl")" ] || fail "$rec does not describe $(basename "$whl")"
  done
}
pair_is() {  # pair_is DIST SHA: one wheel with that sha, its record, nothing hidden
  local n; n=$(ls "$1"/*.whl | wc -l)
  [ "$n" -eq 1 ] || fail "dist/ holds $n wheels"
  whl=$(only_wheel "$1")
  [ "$(sha "$whl")" = "$2" ] || fail "the wheel's sha256 is $(sha "$whl"), expected $2"
  [ "$(recorded_sha "$whl.opforge-record.json")" = "$2" ] || fail "the record does not describe the wheel"
  local hidden; hidden=$(ls -A "$1" | grep '^\.' | grep -v '^\.opforge-dist\.lock$' || true)
  [ -z "$hidden" ] || fail "hidden files left in dist/: $hidden"
}

build $A "$work/bA" "$work/dist" > "$work/a.log" 2>&1 || { cat "$work/a.log"; fail "first build"; }
shaA=$(sha "$(only_wheel "$work/dist")")
build $B "$work/bR" "$work/ref" > "$work/ref.log" 2>&1 || { cat "$work/ref.log"; fail "reference build"; }
shaB=$(sha "$(only_wheel "$work/ref")")
[ "$shaA" != "$shaB" ] || fail "SOURCE_DATE_EPOCH does not change the wheel: the test proves nothing"
pair_is "$work/dist" "$shaA"

# During compilation: SIGKILL to opforge alone. Its children are in their own process group and
# die with it (parent-death signal), so nothing of that build runs on once opforge is gone.
SOURCE_DATE_EPOCH=$B "$opforge" build "$work/r.toml" --build-dir "$work/bK" --dist-dir "$work/dist" -j1 > "$work/k.log" 2>&1 &
pid=$!
for _ in $(seq 1 1200); do grep -q '^\[1/' "$work/k.log" 2>/dev/null && break; sleep 0.05; done
grep -q '^\[1/' "$work/k.log" || { cat "$work/k.log"; fail "the build never started compiling"; }
kill -KILL "$pid"; wait "$pid" 2>/dev/null || true
left=""
for _ in $(seq 1 20); do
  left=$(pgrep -f -- "$work/bK" || true)
  [ -z "$left" ] && break
  sleep 0.1
done
[ -z "$left" ] || { ps -o pid,args -p $left || true; fail "children of the killed build still run after 2 s"; }
echo "compile: children gone at once"
no_mismatched_record "$work/dist"
pair_is "$work/dist" "$shaA"
build $B "$work/bK" "$work/dist" > "$work/k2.log" 2>&1 || { cat "$work/k2.log"; fail "build after the compile kill"; }
pair_is "$work/dist" "$shaB"
build $A "$work/bA" "$work/dist" > /dev/null 2>&1 || fail "restoring the first wheel"
pair_is "$work/dist" "$shaA"

for point in wheel-written record-stashed wheel-renamed record-renamed; do
  set +e; build $B "$work/bA" "$work/dist" OPFORGE_TEST_STOP_AT=$point > "$work/$point.log" 2>&1; rc=$?; set -e
  [ $rc -eq 137 ] || { cat "$work/$point.log"; fail "$point: exit $rc, expected 137 (SIGKILL)"; }
  no_mismatched_record "$work/dist"
  case $point in
    wheel-written) [ "$(sha "$(only_wheel "$work/dist")")" = "$shaA" ] || fail "$point: the previous wheel is gone"
                   [ -f "$(only_wheel "$work/dist").opforge-record.json" ] || fail "$point: the previous record is gone" ;;
    record-renamed) [ "$(sha "$(only_wheel "$work/dist")")" = "$shaB" ] || fail "$point: the new wheel is not in place" ;;
  esac
  build $B "$work/bA" "$work/dist" > "$work/$point-2.log" 2>&1 || { cat "$work/$point-2.log"; fail "$point: next build"; }
  pair_is "$work/dist" "$shaB"
  echo "$point: dist/ consistent after the kill; the next build gives the uninterrupted sha256"
  build $A "$work/bA" "$work/dist" > /dev/null 2>&1 || fail "restoring the first wheel"
  pair_is "$work/dist" "$shaA"
done
echo "PASS"
