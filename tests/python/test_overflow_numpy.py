"""The non-torch parts with numpy: statistics of arrays against a numpy oracle, import hygiene."""
import subprocess
import sys

import numpy as np
import pytest

from opforge_ops import overflow


def oracle(a):
    f = a[np.isfinite(a)]
    fa = np.abs(f)
    info = np.finfo(a.dtype)
    return dict(nan=int(np.isnan(a).sum()), posinf=int(np.isposinf(a).sum()), neginf=int(np.isneginf(a).sum()),
                zero=int((a == 0).sum()), subnormal=int(((fa > 0) & (fa < info.tiny)).sum()),
                over=int((fa > info.max / 2).sum()))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("offset", [0, 1, 3])
def test_random_with_specials(dtype, offset):
    rng = np.random.default_rng(3)
    info = np.finfo(dtype)
    a = (rng.standard_normal(1000 + offset) * 10).astype(dtype)
    a[0] = np.nan
    a[-1] = -np.inf
    a[5] = info.tiny / 4
    a[6] = -0.0
    a[7] = info.max * 0.75
    a = a[offset:]
    s = overflow.tensor_stats(a)
    o = oracle(a)
    assert {k: getattr(s, k) for k in o} == o
    if not o["nan"]:
        f = np.abs(a[np.isfinite(a)])
        assert s.abs_min == float(f.min())
        assert s.abs_max == (np.inf if o["posinf"] + o["neginf"] else float(f.max()))
    else:
        assert np.isnan(s.abs_min) and np.isnan(s.abs_max)


def test_empty_array():
    s = overflow.tensor_stats(np.zeros(0, np.float32))
    assert s.count == 0 and s.nan == 0


def test_import_does_not_import_torch_or_numpy():
    code = "import sys, opforge_ops.overflow; print('torch' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_cuda_entry_points_fail_cleanly_without_a_gpu():
    from opforge_ops.overflow import _lib as L
    lib = L.lib()
    n = lib.opforge_overflow_cuda_device_count()
    if n > 0:
        pytest.skip("a GPU is present: the no-GPU path cannot be checked")
    descs = (L.TensorDesc * 1)(L.TensorDesc(8, 1, L.F32, 0, 0.0))
    out = (L.Stats * 1)()
    rc = lib.opforge_overflow_stats_cuda_sync(descs, 1, out, None)
    assert rc == -19
    assert lib.opforge_overflow_last_error().decode() != ""


def test_one_device_per_call():
    torch = pytest.importorskip("torch")
    from opforge_ops.overflow import stats_many
    assert [s.count for s in stats_many([torch.ones(3), np.ones(2, dtype=np.float32)])] == [3, 2]
    if torch.cuda.is_available():
        with pytest.raises(ValueError, match="one device's tensors per call"):
            stats_many([torch.ones(3), torch.ones(3, device="cuda")])
