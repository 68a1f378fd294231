# Runs inside the Debian 13 root (tests/install/trixie_cuda.sh), in /tmp/opforge-test: in/ holds
# opforge's wheel and the fixture extension's tar. PyPI's torch 2.6.0 is in /opt/torch26.
set -euo pipefail
cd /tmp/opforge-test
step() { echo "== $*"; }
grep -q 'VERSION_ID="13"' /etc/os-release

python3 -m venv venv
step "pip install the wheel"
venv/bin/pip install -q --no-index in/opforge-*.whl
export PATH="/tmp/opforge-test/venv/bin:$PATH"
unset CUDA_HOME CUDA_PATH DS_SKIP_CUDA_CHECK TORCH_CUDA_ARCH_LIST

step "the machine: Debian's CUDA 12.4 behind /usr/bin/nvcc, gcc 14 the default, g++-13 installed"
nvcc --version | tail -2
gcc -dumpversion | tee gcc.txt
grep -qx 14 gcc.txt
g++-13 -dumpversion
/opt/torch26/bin/python -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)' | tee torch.txt
grep -q "CUDA 12.4" torch.txt

step "opforge doctor: CUDA 12.4 in the distribution's layout, valid, accepting gcc <= 13"
opforge doctor >doctor.txt 2>&1 || true
cat doctor.txt
grep -Eq '^ +[* ] /usr +CUDA 12\.4 \[nvcc --version\]' doctor.txt
grep -q 'layout: distribution package (nvcc /usr/lib/nvidia-cuda-toolkit/bin/nvcc, cuda.h in /usr/include, libcudart in /usr/lib/x86_64-linux-gnu)' doctor.txt
grep -q 'accepts gcc <= 13' doctor.txt
grep -q "its own wrapper /usr/lib/nvidia-cuda-toolkit/bin/g++ runs g++-13 " doctor.txt
! grep -q 'rejected' doctor.txt

project() {  # project FOLDER: the fixture with [cuda] version = "torch" and torch 2.6's Python
  mkdir -p "$1"
  tar -xf in/cuda_extension.tar -C "$1" --strip-components=1
  sed -i 's|^command = .*|command = ["/opt/torch26/bin/python", "setup.py", "bdist_wheel"]|' "$1/opforge.toml"
  # torch declared, as a torch extension's users install it: its libraries are then torch's.
  sed -i 's|^    packages=\["tinyscale"\],|&\n    install_requires=["torch"],|' "$1/setup.py"
  cat >>"$1/opforge.toml" <<'TOML'

[cuda]
version = "torch"
python = "/opt/torch26/bin/python"
TOML
}
build() {  # build FOLDER: opforge build, its output kept
  (cd "$1" && opforge build opforge.toml) >"$1.txt" 2>&1 || {
    cat "$1.txt"
    return 1
  }
  cat "$1.txt"
}

step "opforge plan: the exact toolkit (torch 2.6's CUDA 12.4), gcc 13 chosen over the default gcc 14"
project a
(cd a && opforge plan opforge.toml) | tee a-plan.txt
grep -Eq '^CUDA toolkit +12\.4 at /usr$' a-plan.txt
grep -q 'gcc-13\|g++-13' a-plan.txt
! grep -qi 'warning' a-plan.txt

step "opforge build"
t0=$(date +%s)
build a
echo "first build: $(($(date +%s) - t0)) s"
! grep -qi "warning:.*\(mismatch\|minor\|DS_SKIP\)" a.txt
whl_a=$(ls a/dist/*.whl)
case "$whl_a" in
  *-cp313-cp313-manylinux_2_*_x86_64.whl) ;;
  *) echo "FAIL: $whl_a is not cp313 manylinux (torch is a requirement: its libraries are torch's)"; exit 1 ;;
esac
! grep -q "not manylinux" a.txt
/opt/torch26/bin/python - "$whl_a.opforge-record.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["inputs"]
assert r["toolkit"]["version"] == "12.4", r["toolkit"]
env = r.get("command_environment", {})
assert "DS_SKIP_CUDA_CHECK" not in env, env
hc = r["compiler"]
assert hc["cxx"] == "/usr/bin/g++-13" and hc["version"].startswith("gcc 13."), hc
print("record: toolkit", r["toolkit"]["version"], "at", r["toolkit"]["root"], "host compiler", hc["version"])
PY

step "opforge inspect shows sm_90 code"
opforge inspect "$whl_a" >a-inspect.txt
cat a-inspect.txt
grep -q 'sm_90' a-inspect.txt

step "the wheel imports in the root with torch 2.6"
/opt/torch26/bin/python -m zipfile -e "$whl_a" site
PYTHONPATH=site /opt/torch26/bin/python -c "
import torch, tinyscale
assert tinyscale.cuda_version() == 12040, tinyscale.cuda_version()
assert torch.equal(tinyscale.scale(torch.arange(4.), 2.0), torch.arange(4.) * 2)
print('tinyscale runs with torch', torch.__version__)"

step "a second build from another folder gives the same bytes"
project second-folder
build second-folder
cmp "$whl_a" second-folder/dist/*.whl
echo "all steps passed"
