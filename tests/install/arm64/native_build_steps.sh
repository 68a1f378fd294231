# Runs inside the arm64 root (tests/install/arm64_native_build.sh), under emulation: a Grace node
# building for itself. in/ holds opforge's aarch64 wheel and NVIDIA's aarch64 toolkit wheels (nvcc,
# crt, nvvm, runtime, CCCL), laid out here as a CUDA_HOME the way `[cuda] provision = "pypi"` does.
set -euo pipefail
cd /tmp/opforge-test
step() { echo "== $*"; }
step "the aarch64 toolkit from NVIDIA's wheels"
mkdir -p cuda/site
for w in in/nvidia_*.whl; do python3 -m zipfile -e "$w" cuda/site; done
(cd cuda && ln -s site/nvidia/cu13/bin bin && ln -s site/nvidia/cu13/include include &&
  ln -s site/nvidia/cu13/nvvm nvvm && mkdir lib64 && for f in site/nvidia/cu13/lib/*; do ln -s "../$f" lib64/; done &&
  ln -s libcudart.so.13 lib64/libcudart.so && ln -s lib64 lib && chmod +x bin/* nvvm/bin/*)
cuda/bin/nvcc --version | tail -1
step "pip install opforge's aarch64 wheel (offline)"
python3 -m venv venv
venv/bin/pip install -q --no-index in/opforge-*_aarch64.whl
export PATH="/tmp/opforge-test/venv/bin:/tmp/opforge-test/cuda/bin:$PATH" CUDA_HOME=/tmp/opforge-test/cuda
export TORCH_CUDA_ARCH_LIST=9.0
step "opforge doctor finds the toolkit"
opforge doctor > doctor.txt 2>&1 || true
grep -q "/tmp/opforge-test/cuda  CUDA 13.0" doctor.txt || { cat doctor.txt; echo "doctor does not list the toolkit"; exit 1; }
step "opforge build default, natively"
opforge build default --build-dir build --dist-dir dist -q > build.txt 2>&1 || { cat build.txt; exit 1; }
wheel=$(ls dist/*.whl)
echo "$wheel"
case "$wheel" in *-cp38-abi3-manylinux_2_*_aarch64.whl) ;; *) echo "not an aarch64 wheel: $wheel"; exit 1 ;; esac
grep -E "^  (built|failed|skipped)" build.txt
[ "$(grep -c '^  built ' build.txt)" = 4 ] || { cat build.txt; echo "not every op was built"; exit 1; }
opforge inspect "$wheel" > inspect.txt
grep -q "gpu code: sm_90" inspect.txt || { cat inspect.txt; echo "the wheel holds no sm_90 code"; exit 1; }
echo "PASS: opforge built the default recipe on aarch64 (emulated), sm_90 code, $(basename "$wheel")"
