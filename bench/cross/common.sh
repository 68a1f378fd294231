# Sourced by the bench/cross scripts: what they share.

# timed LABEL CMD...: runs CMD, appends "LABEL wall user sys" to $work/times.
timed() {
  local label=$1; shift
  /usr/bin/time -f "%e %U %S" -o "$work/time.$label" "$@"
  echo "$label $(cat "$work/time.$label")" >> "$work/times"
}

# aarch64_toolkit DEST WHEELS: NVIDIA's aarch64 nvcc, crt, nvvm, runtime and CCCL wheels of this
# machine's toolkit release (CUDA 13.0), downloaded into WHEELS and laid out in DEST as a CUDA_HOME
# (bin, include, nvvm, lib64) for a build run natively inside an arm64 root.
aarch64_toolkit() {
  local dest=$1 wheels=$2 w f
  mkdir -p "$dest/site"
  python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_aarch64 \
    --platform manylinux_2_17_aarch64 -d "$wheels" nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 \
    nvidia-nvvm==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85
  for w in "$wheels"/*.whl; do python3 -m zipfile -e "$w" "$dest/site"; done
  (cd "$dest" && ln -s site/nvidia/cu13/bin bin && ln -s site/nvidia/cu13/include include &&
    ln -s site/nvidia/cu13/nvvm nvvm && mkdir lib64 && for f in site/nvidia/cu13/lib/*; do ln -s "../$f" lib64/; done &&
    ln -s libcudart.so.13 lib64/libcudart.so && ln -s lib64 lib && chmod +x bin/* nvvm/bin/*)
}

# causal_conv1d_recipe FILE PLATFORM VENV: the recipe both project scripts build causal-conv1d
# 1.7.0 with (the unpacked sdist beside FILE, sm_90 only, the command backend through VENV's python).
causal_conv1d_recipe() {
  cat > "$1" <<TOML
[package]
name = "causal-conv1d"
version = "1.7.0"

[source]
path = "causal_conv1d-1.7.0"

[cuda]
python = "$3/bin/python"

[arch]
list = "9.0"

[build]
backend = "command"
platform = "$2"
command = ["$3/bin/python", "setup.py", "bdist_wheel"]

[build.env]
CAUSAL_CONV1D_FORCE_BUILD = "TRUE"
TOML
}

# warm_aarch64_cache: cross-builds the small test extension in $work/warm, which fetches the aarch64
# torch and CUDA runtime into the cache folder, so that a timed build after it downloads nothing.
warm_aarch64_cache() {
  cp -r "$repo/tests/fixtures/cuda_extension" "$work/warm"
  sed -e '/^\[build\]/a platform = "aarch64"' -e "s#^command = .*#command = [\"$venv/bin/python\", \"setup.py\", \"bdist_wheel\"]#" \
    "$work/warm/opforge.toml" > "$work/warm/x.toml"
  printf '[cuda]\npython = "%s"\n' "$venv/bin/python" >> "$work/warm/x.toml"
  (cd "$work/warm" && "$opforge" build x.toml -q) > "$work/warm.log" 2>&1 || { tail -30 "$work/warm.log"; exit 1; }
}
