# Runs inside the arm64 root (tests/install/arm64_torch_check.sh), under emulation.
set -euo pipefail
python=/opt/torch215/bin/python
start=$(date +%s)
out=$("$python" -c 'import platform, torch; print(platform.machine(), torch.__version__, torch.cuda.is_available())')
echo "== import torch ($(($(date +%s) - start)) s): $out"
case "$out" in
  "aarch64 2.15.0"*" False") ;;
  *) echo "expected aarch64, torch 2.15.0 and no GPU"; exit 1 ;;
esac
