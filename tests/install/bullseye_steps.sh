# Runs inside the Debian 11 root (tests/install/bullseye.sh), in /tmp/opforge-test/in: the wheels.
set -euo pipefail
cd /tmp/opforge-test
step() { echo "== $*"; }
grep -q 'VERSION_ID="11"' /etc/os-release
ldd --version | sed -n 1p

step "pip install the wheel (offline: opforge's and PyPI's ninja)"
python3 -m venv venv
venv/bin/pip install -q --no-index in/*.whl
export PATH="/tmp/opforge-test/venv/bin:$PATH"
[ "$(command -v opforge)" = /tmp/opforge-test/venv/bin/opforge ]

step "opforge --version"
opforge --version | tee version.txt
grep -Eq '^opforge [0-9][^ ]* \(commit [0-9a-f]{40}\)$' version.txt

step "opforge doctor"
opforge doctor | tee doctor.txt
grep -q 'gcc 10\.' doctor.txt
if [ -x /usr/local/cuda/bin/nvcc ]; then grep -q 'CUDA 13\.0' doctor.txt; fi

step "opforge build: a small CPU-only recipe with gcc 10"
mkdir -p tiny
cat > tiny/recipe.toml <<TOML
[package]
name = "tiny-ops"
version = "1.0.0"
local_version = "none"

[source]
path = "/tmp/opforge-test/venv/share/opforge"
ops_dir = "src/kernels"

[ops]
utils = true
TOML
opforge build tiny/recipe.toml --build-dir "$PWD/tiny/build" --dist-dir "$PWD/tiny/dist" | tee tiny/build.txt
venv/bin/pip install -q --no-index tiny/dist/*.whl
/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import opforge_ops; print(opforge_ops.build_info["host_compiler"], opforge_ops.available_ops())' \
  "$(venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')" | tee tiny/import.txt
grep -q "gcc 10\." tiny/import.txt
grep -q "utils" tiny/import.txt

step "opforge build default (the overflow op with CUDA and gcc 10)"
mkdir -p def && cd def
rc=0
opforge build default > build.txt 2>&1 || rc=$?
cat build.txt
if [ "$rc" -eq 0 ]; then
  grep -Eq 'built +overflow' build.txt
  ls dist/*.whl
  # This root has no python3-dev: the overflow hook's stable-ABI extension is left out, and said so.
  grep -q "^left out: _overflow_hooks.abi3.so (the stable-ABI extension of overflow)" build.txt
  ls dist/*-py3-none-manylinux_2_*_x86_64.whl
elif [ "$rc" -eq 3 ]; then
  # CUDA 13.0 refusing gcc 10: the plan says so, with the hint to install a newer gcc.
  grep -qi 'gcc' build.txt && grep -q 'hint' build.txt
else
  exit "$rc"
fi
echo "all steps passed"
