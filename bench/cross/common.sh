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
