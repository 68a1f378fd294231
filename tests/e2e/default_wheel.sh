#!/usr/bin/env bash
# The CTest fixture `default_wheel`: builds recipes/default.toml once (one GPU architecture to
# keep CI short) and unpacks the wheel for the Python tests.
set -euo pipefail
opforge=$1 src=$2 out=$3
rm -rf "$out"; mkdir -p "$out"
export TORCH_CUDA_ARCH_LIST="9.0" OPFORGE_CACHE_DIR="$out/cache"
"$opforge" build "$src/recipes/default.toml" --build-dir "$out/build" --dist-dir "$out/dist"
whl=$(ls "$out"/dist/*.whl)
/usr/bin/python3 -m zipfile -e "$whl" "$out/site"
echo "default wheel: $whl"
