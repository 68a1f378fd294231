# Runs inside the Debian 12 root (tests/install/bookworm_cuda.sh), in /tmp/opforge-test: in/ holds
# opforge's wheel.
set -euo pipefail
cd /tmp/opforge-test
step() { echo "== $*"; }
grep -q 'VERSION_ID="12"' /etc/os-release

python3 -m venv venv
if ls in/opforge-*.whl >/dev/null 2>&1; then
  step "pip install the wheel"
  venv/bin/pip install -q --no-index in/opforge-*.whl
  export PATH="/tmp/opforge-test/venv/bin:$PATH"
  share=$(venv/bin/python -c 'import sys; print(sys.prefix)')/share/opforge
else
  # A development build installed into the root's /opt/opforge (cmake --install), its libraries there.
  step "opforge from /opt/opforge"
  export PATH="/opt/opforge/bin:$PATH"
  share=/opt/opforge/share/opforge
fi
[ -d "$share/src/kernels/overflow" ]

step "the machine: Debian's CUDA behind /usr/bin/nvcc, gcc 12 the default"
readlink -f "$(command -v nvcc)"
head -3 /usr/bin/nvcc
gcc -dumpversion

step "opforge doctor lists both toolkits, each valid"
opforge doctor | tee doctor.txt
grep -Eq '^ +[* ] /usr +CUDA 11\.8 \[nvcc --version\]' doctor.txt
grep -q 'layout: distribution package (nvcc /usr/lib/nvidia-cuda-toolkit/bin/nvcc, cuda.h in /usr/include, libcudart in /usr/lib/x86_64-linux-gnu)' doctor.txt
grep -q 'accepts gcc <= 11, clang <= 14 (/usr/include/crt/host_config.h)' doctor.txt
grep -q 'its own wrapper /usr/lib/nvidia-cuda-toolkit/bin/g++ runs g++-11 ' doctor.txt
if [ -x /usr/local/cuda/bin/nvcc ]; then
  grep -Eq '^ +[* ] /usr/local/cuda-13\.0 +CUDA 13\.0' doctor.txt
  grep -q 'layout: NVIDIA' doctor.txt
fi
! grep -q 'rejected' doctor.txt

recipe() {  # recipe FOLDER VERSION: the overflow op alone, for one architecture
  mkdir -p "$1"
  cat > "$1/recipe.toml" <<TOML
[package]
name = "opforge-ops"
version = "0.1.0"
local_version = "cu{cuda_major}"

[source]
path = "$share"
ops_dir = "src/kernels"

[cuda]
version = "$2"

[arch]
list = "8.0"

[ops]
overflow = true
aio = false
cpu_adam = false
utils = false
TOML
}

build() {  # build FOLDER: opforge build, its output kept
  (cd "$1" && opforge build recipe.toml --build-dir "$PWD/build" --dist-dir "$PWD/dist") > "$1.txt" 2>&1 || {
    cat "$1.txt"
    return 1
  }
  cat "$1.txt"
}

step "opforge build with [cuda] version = \"11.8\": gcc 11 chosen, not the default gcc 12"
recipe a 11.8
opforge plan a/recipe.toml | tee a-plan.txt
grep -Eq '^CUDA toolkit +11\.8 at /usr$' a-plan.txt
grep -q 'gcc-11\|g++-11' a-plan.txt
t0=$(date +%s)
build a
echo "first build: $(($(date +%s) - t0)) s"
grep -Eq 'built +overflow' a.txt
whl_a=$(ls a/dist/*.whl)

step "opforge inspect shows sm_80 code"
opforge inspect "$whl_a" | tee a-inspect.txt
grep -q 'sm_80' a-inspect.txt

step "the wheel imports in the root"
venv/bin/pip install -q --no-index "$whl_a"
venv/bin/python -c 'import opforge_ops as o; print(o.available_ops(), o.build_info["host_compiler"], o.build_info["toolkit_version"])' | tee import.txt
grep -q overflow import.txt
grep -q "gcc 11\." import.txt
grep -q "11.8" import.txt

step "a second build from another folder gives the same bytes"
recipe second-folder 11.8
build second-folder
cmp "$whl_a" second-folder/dist/*.whl

step "again with CUDA_HOME=/usr (what torch's cpp_extension derives from which nvcc) and [cuda] version = \"auto\""
recipe c auto
CUDA_HOME=/usr opforge plan c/recipe.toml | tee c-plan.txt
grep -Eq '^CUDA toolkit +11\.8 at /usr$' c-plan.txt
CUDA_HOME=/usr build c
( cd c && ../venv/bin/python -m zipfile -e dist/*.whl unpacked )
( cd a && ../venv/bin/python -m zipfile -e dist/*.whl unpacked )
cmp a/unpacked/opforge_ops/_lib/libopforge_overflow.so c/unpacked/opforge_ops/_lib/libopforge_overflow.so

step "an inherited CUDA_HOME does not defeat the recipe: CUDA_HOME=/usr/local/cuda with [cuda] version = \"11.8\""
if [ -x /usr/local/cuda/bin/nvcc ]; then
  CUDA_HOME=/usr/local/cuda opforge plan a/recipe.toml | tee d-plan.txt
  grep -Eq '^CUDA toolkit +11\.8 at /usr$' d-plan.txt
  grep -q 'CUDA_HOME=/usr/local/cuda (CUDA 13.0) is not used' d-plan.txt
fi
echo "all steps passed"
