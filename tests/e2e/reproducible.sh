#!/usr/bin/env bash
# The default recipe built from two copies of the repository in two different folders (source and
# build paths differ, different TMPDIRs) gives wheels with the same sha256.
set -euo pipefail
opforge=$1 src=$2 work=$3
. "$src/tests/e2e/lib.sh"
rm -rf "$work"; mkdir -p "$work"
copy_tree "$src" "$work/a/src"
copy_tree "$src" "$work/second-place/another-src"
export TORCH_CUDA_ARCH_LIST="9.0"
for side in "a/src" "second-place/another-src"; do
  mkdir -p "$work/$side.tmp"
  TMPDIR="$work/$side.tmp" OPFORGE_CACHE_DIR="$work/$side.cache" \
    "$opforge" build "$work/$side/recipes/default.toml" --build-dir "$work/$side.build" \
    --dist-dir "$work/$side.dist" > "$work/$side.log" 2>&1 || { cat "$work/$side.log"; fail "build in $side"; }
done
a=$(only_wheel "$work/a/src.dist"); b=$(only_wheel "$work/second-place/another-src.dist")
[ "$(basename "$a")" = "$(basename "$b")" ] || fail "names differ: $a $b"
ha=$(sha256sum "$a" | cut -d' ' -f1); hb=$(sha256sum "$b" | cut -d' ' -f1)
echo "first:  $ha $a"; echo "second: $hb $b"
[ "$ha" = "$hb" ] || { cmp -l "$a" "$b" | head; fail "the two wheels differ"; }
echo "PASS: identical wheels from two folders"
