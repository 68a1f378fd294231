#!/usr/bin/env bash
# `opforge build --release` builds a clean git tree and refuses a dirty one (exit 2, clear message).
# A git source on a branch: --release refuses it (branches move), --release-of RECORD accepts it
# while the branch is at the recorded commit and refuses it by name once the branch has moved;
# `opforge verify` of a release record does the same.
set -euo pipefail
opforge=$1 src=$2 work=$3
. "$src/tests/e2e/lib.sh"
rm -rf "$work"; mkdir -p "$work/repo/ops"
cp -r "$src/tests/fixtures/ops/cpuop" "$work/repo/ops/"
cat > "$work/repo/recipe.toml" <<'TOML'
[package]
name = "release-demo"
local_version = "g{commit}"
[source]
path = "."
ops_dir = "ops"
[ops]
cpuop = true
[build]
build_dir = "out/build"
dist_dir = "out/dist"
TOML
printf 'out/\n' > "$work/repo/.gitignore"
cd "$work/repo"
git init -q . && git -c user.name=t -c user.email=t@e add -A && git -c user.name=t -c user.email=t@e commit -qm init
export OPFORGE_CACHE_DIR="$work/cache"
"$opforge" build recipe.toml --release > "$work/clean.log" 2>&1 || { cat "$work/clean.log"; fail "a clean tree was refused"; }
short=$(git rev-parse --short=7 HEAD)
ls out/dist/release_demo-0.1.0+g$short-*.whl >/dev/null || fail "no wheel labelled g$short"
echo "stray" > stray.txt
set +e; out=$("$opforge" build recipe.toml --release 2>&1); rc=$?; set -e
echo "$out"
[ $rc -eq 2 ] || fail "a dirty tree gave exit $rc, not 2"
grep -q "uncommitted or untracked changes" <<<"$out" || fail "unclear message"
# Without --release the same tree builds, labelled .dirty.
"$opforge" build recipe.toml > "$work/dirty.log" 2>&1 || { cat "$work/dirty.log"; fail "plain build of a dirty tree"; }
ls out/dist/release_demo-0.1.0+g$short.dirty-*.whl >/dev/null || fail "no .dirty label"

# --- a git source following a branch
g="git -c user.name=t -c user.email=t@e"
mkdir -p "$work/up/ops" && cp -r "$src/tests/fixtures/ops/cpuop" "$work/up/ops/"
(cd "$work/up" && git init -q -b main . && $g add -A && $g commit -qm one)
mkdir -p "$work/rel"
cat > "$work/rel/recipe.toml" <<TOML
[package]
name = "release-demo"
local_version = "g{commit}"
[source]
git = "$work/up"
rev = "main"
ops_dir = "ops"
[ops]
cpuop = true
[build]
build_dir = "$work/rel/build"
dist_dir = "$work/rel/dist"
TOML
cd "$work/rel"
set +e; out=$("$opforge" build recipe.toml --release 2>&1); rc=$?; set -e
[ $rc -eq 2 ] && grep -q 'rev "main" is a branch' <<<"$out" || { echo "$out"; fail "--release took a branch rev (exit $rc)"; }
"$opforge" build recipe.toml > plain.log 2>&1 || { cat plain.log; fail "plain build of the git source"; }
rec=$(ls "$work"/rel/dist/*.opforge-record.json)
first=$(cd "$work/up" && git rev-parse HEAD)
grep -q "\"commit\": \"$first\"" "$rec" || fail "the record does not name $first"
cp "$rec" "$work/plain-record.json"
"$opforge" build recipe.toml --release-of "$rec" > pinned.log 2>&1 || { cat pinned.log; fail "--release-of refused the recorded commit"; }
rel_rec=$(ls -t "$work"/rel/dist/*.opforge-record.json | head -n 1)
grep -q '"release": true' "$rel_rec" || fail "the release record does not say release"
cp "$rel_rec" "$work/release-record.json"
"$opforge" verify --allow-run "$work/release-record.json" || fail "verify of the release record"
# The branch moves on: the recorded release is refused by name, by build and by verify.
(cd "$work/up" && echo "// two" >> ops/cpuop/op.toml && $g commit -qam two)
set +e; out=$("$opforge" build recipe.toml --release-of "$work/release-record.json" 2>&1); rc=$?; set -e
echo "$out"
[ $rc -eq 2 ] || fail "--release-of after the branch moved gave exit $rc, not 2"
grep -q "but the build record names $first" <<<"$out" || fail "unclear message for a moved branch"
set +e; out=$("$opforge" verify --allow-run "$work/release-record.json" 2>&1); rc=$?; set -e
[ $rc -eq 2 ] && grep -q "but the build record names $first" <<<"$out" || { echo "$out"; fail "verify of a moved release (exit $rc)"; }
# A record of a build not made from git cannot pin a release.
printf '{"format": "opforge-build-record/1", "inputs": {"source": {"commit": ""}}, "outputs": {}}' > "$work/nogit.json"
set +e; out=$("$opforge" build recipe.toml --release-of "$work/nogit.json" 2>&1); rc=$?; set -e
[ $rc -eq 2 ] && grep -q "names no source commit" <<<"$out" || { echo "$out"; fail "record without commit (exit $rc)"; }
echo "PASS"
