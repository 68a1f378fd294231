#!/usr/bin/env bash
# `opforge build --release` builds a clean git tree and refuses a dirty one (exit 2, clear message).
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
echo "PASS"
