"""Statistics of tensors and arrays through the native library (CPU or CUDA), one call per list."""
import ctypes
import math

from . import _lib as L

_NP_CODES = {"float32": L.F32, "float16": L.F16, "float64": L.F64}
_TORCH_NAMES = {"float32": L.F32, "float16": L.F16, "bfloat16": L.BF16, "float64": L.F64,
                "float8_e4m3fn": L.F8E4M3FN, "float8_e5m2": L.F8E5M2}


class TensorStats:
    """Statistics of one tensor; abs_min/abs_max are what torch's abs().min()/max() would give."""
    __slots__ = ("count", "nan", "posinf", "neginf", "zero", "subnormal", "over", "abs_min", "abs_max")

    def __init__(self, s):
        self.count, self.nan, self.posinf, self.neginf = s.count, s.nan_count, s.posinf_count, s.neginf_count
        self.zero, self.subnormal, self.over = s.zero_count, s.subnormal_count, s.over_threshold_count
        finite = self.count - self.nan - self.posinf - self.neginf
        if self.nan:
            self.abs_min = self.abs_max = math.nan
        else:
            self.abs_max = math.inf if (self.posinf or self.neginf) else s.abs_max
            self.abs_min = s.abs_min if finite else math.inf

    @property
    def inf(self):
        return self.posinf + self.neginf

    def __repr__(self):
        return "TensorStats(%s)" % ", ".join("%s=%r" % (k, getattr(self, k)) for k in self.__slots__)


def _torch_code(t):
    return _TORCH_NAMES.get(str(t.dtype).replace("torch.", ""))


def supported(var):
    """True when the native library can read var (a float torch tensor or numpy array)."""
    if hasattr(var, "data_ptr"):
        return _torch_code(var) is not None
    return getattr(getattr(var, "dtype", None), "name", None) in _NP_CODES


def stats_many(tensors, threshold=0.0):
    """TensorStats for each tensor (all on one device kind): one native call, one synchronisation."""
    if not tensors:
        return []
    keep = []
    descs = (L.TensorDesc * len(tensors))()
    cuda = False
    stream = None
    for i, t in enumerate(tensors):
        if hasattr(t, "data_ptr"):
            if t.is_cuda:
                cuda = True
                import torch
                stream = torch.cuda.current_stream(t.device).cuda_stream
            if t.numel() and not t.is_contiguous():
                t = t.contiguous()
            keep.append(t)
            ptr = t.data_ptr() if t.numel() else 0
            descs[i] = L.TensorDesc(ptr, t.numel(), _torch_code(t), 0, threshold)
        else:
            import numpy as np
            a = np.ascontiguousarray(t)
            keep.append(a)
            descs[i] = L.TensorDesc(a.ctypes.data if a.size else 0, a.size, _NP_CODES[a.dtype.name], 0, threshold)
    out = (L.Stats * len(tensors))()
    lib = L.lib()
    if cuda:
        L.check(lib.opforge_overflow_stats_cuda_sync(descs, len(tensors), out, stream))
    else:
        L.check(lib.opforge_overflow_stats_cpu_multi(descs, len(tensors), out))
    return [TensorStats(s) for s in out]


def tensor_stats(var, threshold=0.0):
    """TensorStats of one torch tensor or numpy array (threshold <= 0: the dtype's max / 2)."""
    return stats_many([var], threshold)[0]
