# Runs inside the arm64 root with PyPI's aarch64 torch (tests/install/arm64_extension_check.sh),
# under emulation: the cross-built tinyscale wheel (in/*.whl), unpacked, imported after torch (its
# _C links libtorch and libcudart.so.13, which torch's nvidia-* wheels provide) and used on the CPU.
set -euo pipefail
cd /tmp/opforge-test
python=/opt/torch215/bin/python
mkdir site
"$python" -m zipfile -e in/*.whl site
PYTHONPATH=site "$python" - <<'PY'
import platform
import torch
import tinyscale

assert platform.machine() == "aarch64", platform.machine()
got = tinyscale.scale(torch.arange(5, dtype=torch.float32), 2.5).tolist()
assert got == [0.0, 2.5, 5.0, 7.5, 10.0], got
# CUDART_VERSION of the headers it was compiled with: the aarch64 CUDA 13.0 runtime's.
assert tinyscale.cuda_version() == 13000, tinyscale.cuda_version()
print("PASS: tinyscale for aarch64 imports with torch", torch.__version__, "and scales on the CPU:", got)
PY
