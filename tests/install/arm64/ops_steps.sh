# Runs inside the arm64 root with PyPI's aarch64 torch (tests/install/arm64_ops_check.sh), under
# emulation: the cross-built opforge_ops wheel (in/*.whl), unpacked, used through its Python
# package the way a Grace node uses it. Every op computes against a reference worked out here.
set -euo pipefail
cd /tmp/opforge-test
python=/opt/torch215/bin/python
mkdir site
"$python" -m zipfile -e in/*.whl site
PYTHONPATH=site "$python" - <<'PY'
import os, platform
import numpy as np
import torch
from opforge_ops import aio, cpu_adam, utils
from opforge_ops.overflow import DebugUnderflowOverflow, debug, tensor_stats

assert platform.machine() == "aarch64", platform.machine()
print("== python", platform.python_version(), platform.machine(), "torch", torch.__version__)

parts = [np.arange(5, dtype=np.float32), np.arange(7, dtype=np.float32) * 2]
flat = utils.flatten(parts)
assert np.array_equal(flat, np.concatenate(parts)), flat
print("PASS: utils.flatten of two arrays")

rng = np.random.default_rng(0)
p = rng.standard_normal(4099).astype(np.float32)
g = rng.standard_normal(4099).astype(np.float32)
m, v = np.zeros_like(p), np.zeros_like(p)
ref_p, ref_m, ref_v = p.astype(np.float64), np.zeros(4099), np.zeros(4099)
for t in (1, 2):
    cpu_adam.adam_step(p, g, m, v, step=t, lr=1e-3, weight_decay=0.01)
    gg = g + 0.01 * ref_p
    ref_m = 0.9 * ref_m + 0.1 * gg
    ref_v = 0.999 * ref_v + 0.001 * gg * gg
    ref_p = ref_p - 1e-3 * (ref_m / (1 - 0.9**t)) / (np.sqrt(ref_v / (1 - 0.999**t)) + 1e-8)
err = float(np.max(np.abs(p - ref_p)))
assert err < 1e-5, err
print(f"PASS: cpu_adam ({cpu_adam.simd_level()}) two steps within {err:.1e} of a reference Adam")

data = np.frombuffer(os.urandom(1 << 20), dtype=np.uint8)
aio.write("/tmp/opforge-test/aio.bin", data)
back = aio.read("/tmp/opforge-test/aio.bin")
assert bytes(back) == data.tobytes()
print("PASS: aio wrote and read back 1 MiB;", aio.last_note() or "native AIO")

x = torch.linspace(-3, 3, 1000)
x[3], x[500], x[999] = float("nan"), float("inf"), float("-inf")
s = tensor_stats(x)
assert (s.nan, s.posinf, s.neginf) == (1, 1, 1), s
print("PASS: overflow tensor_stats finds the planted NaN, +inf and -inf")

assert debug.load_extension() is not None, "the cross-built _overflow_hooks.abi3.so does not load"
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
with torch.no_grad():
    model[0].weight[0, 0] = float("inf")
DebugUnderflowOverflow(model)
try:
    model(torch.ones(1, 4))
except ValueError as e:
    print("PASS: DebugUnderflowOverflow (C hook extension loaded) stops at the inf:", str(e).splitlines()[0])
else:
    raise SystemExit("DebugUnderflowOverflow did not detect the planted inf")
PY
