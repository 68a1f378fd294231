#!/usr/bin/env bash
# reproducible.sh SOURCE DIST_DIR CLONE [PLATFORM]: a second clone of SOURCE's HEAD, in another
# folder, gives the same wheel bytes from scripts/dist (--platform PLATFORM; x86_64 unless told) as
# the one in DIST_DIR. The clone is kept for the next run (reset to HEAD); only a clean working
# tree can be compared with its commit.
set -euo pipefail
src="$1" dist="$2" clone="$3" platform="${4:-x86_64}"
if [ -n "$(git -C "$src" status --porcelain --untracked-files=no)" ]; then
  echo "SKIP: the working tree has local changes; its wheel is not HEAD's"
  exit 0
fi
head=$(git -C "$src" rev-parse HEAD)
if [ ! -d "$clone/.git" ]; then
  rm -rf "$clone"
  git clone -q --no-local "$src" "$clone"
fi
git -C "$clone" fetch -q "$src" "$head"
git -C "$clone" checkout -q --detach "$head"
git -C "$clone" reset -q --hard "$head"
# Tags decide the version: the clone must see the same ones.
git -C "$src" tag --points-at "$head" | while read -r t; do git -C "$clone" tag -f "$t" "$head" >/dev/null; done
rm -rf "$clone/dist"
"$clone/scripts/dist" --platform "$platform" "$clone/dist"
a=$(ls "$dist"/opforge-*.whl) b=$(ls "$clone"/dist/opforge-*.whl)
[ "$(basename "$a")" = "$(basename "$b")" ] || { echo "names differ: $a $b"; exit 1; }
if cmp "$a" "$b"; then
  echo "same bytes: $(basename "$a") $(sha256sum < "$a" | cut -c1-64)"
else
  echo "the two clones' wheels differ"; exit 1
fi
