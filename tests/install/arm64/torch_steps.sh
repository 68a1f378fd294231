# Runs inside the arm64 root (tests/install/arm64_torch_check.sh), under emulation.
set -euo pipefail
python=/opt/torch215/bin/python
start=$(date +%s)
out=$("$python" -c '
import platform, numpy, torch
t = torch.from_numpy(numpy.arange(1, 5, dtype=numpy.float32))
print(platform.machine(), torch.__version__.split("+")[0], torch.cuda.is_available(), int((t @ t).item()))')
echo "== import torch ($(($(date +%s) - start)) s): $out"
# 1*1 + 2*2 + 3*3 + 4*4 = 30, computed by torch's aarch64 CPU code under emulation.
[ "$out" = "aarch64 2.15.0 False 30" ] || { echo "expected: aarch64 2.15.0 False 30"; exit 1; }
