#!/usr/bin/env bash
# A floor this machine's glibc (Debian 12, 2.36) cannot keep: `opforge build --glibc 2.28` of the
# aio op (dlopen@GLIBC_2.34) fails with exit 1, naming the file, the symbol and its version, and
# leaves nothing in dist/. Without a floor the build says which distributions the wheel misses.
set -euo pipefail
opforge=$1 src=$2 out=$3
source "$src/tests/e2e/lib.sh"
rm -rf "$out"; mkdir -p "$out"
export OPFORGE_CACHE_DIR="$out/cache"
cat > "$out/recipe.toml" <<TOML
[package]
name = "floor-ops"
version = "1.0.0"
local_version = "none"

[source]
path = "$src"
ops_dir = "src/kernels"

[ops]
aio = true

[wheel]
glibc = "2.28"
TOML
rc=0
"$opforge" build "$out/recipe.toml" --build-dir "$out/build" --dist-dir "$out/dist" > "$out/build.txt" 2>&1 || rc=$?
cat "$out/build.txt"
[ "$rc" -eq 1 ] || fail "exit $rc, expected 1"
grep -q "the wheel breaks its glibc floor 2.28 (manylinux_2_28)" "$out/build.txt" || fail "no floor message"
grep -Eq "opforge_ops/_lib/libopforge_aio.so: .*GLIBC_2\.3[0-9] \(([a-z_]+, )*dlopen" "$out/build.txt" ||
  fail "the message names no GLIBC_2.3x symbol of libopforge_aio.so"
grep -q "\-\-root DIR" "$out/build.txt" || fail "no hint to build in an older root"
[ -z "$(ls -A "$out/dist" 2>/dev/null | grep -v '^\.' || true)" ] || fail "dist/ is not empty: $(ls -A "$out/dist")"
# the flag beats the recipe: 2.36 is kept, and the build says what the wheel misses
"$opforge" build "$out/recipe.toml" --glibc 2.36 --build-dir "$out/build" --dist-dir "$out/dist" | tee "$out/ok.txt"
grep -Eq "^glibc:  the wheel needs glibc 2.34(, [^:]*)?: it keeps its floor 2.36" "$out/ok.txt" || fail "no floor line"
ls "$out"/dist/floor_ops-1.0.0-py3-none-manylinux_2_34_x86_64.whl
sed -i '/^\[wheel\]/,$d' "$out/recipe.toml"
"$opforge" build "$out/recipe.toml" --build-dir "$out/build" --dist-dir "$out/dist2" | tee "$out/none.txt"
grep -Eq "^glibc:  the wheel needs glibc 2.34(, [^:]*)?: not on RHEL/Rocky 8 \(glibc 2.28\), Ubuntu 20.04 \(glibc 2.31\), Debian 11 \(glibc 2.31\)" "$out/none.txt" ||
  fail "no line naming the distributions the wheel misses"
echo "glibc_floor: refused, kept, and explained"
