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
    """TensorStats for each tensor (all on one device): one native call, one synchronisation."""
    if not tensors:
        return []
    where = {str(t.device) if getattr(t, "is_cuda", False) else "cpu" for t in tensors}
    if len(where) > 1:
        raise ValueError("stats_many: tensors on %s; pass one device's tensors per call" % ", ".join(sorted(where)))
    keep = []
    descs = (L.TensorDesc * len(tensors))()
    cuda = where != {"cpu"}
    for i, t in enumerate(tensors):
        if hasattr(t, "data_ptr"):
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
        import torch
        device = tensors[0].device
        with torch.cuda.device(device):  # the launch goes to the tensors' GPU, on its current stream
            L.check(lib.opforge_overflow_stats_cuda_sync(descs, len(tensors), out,
                                                         torch.cuda.current_stream(device).cuda_stream))
    else:
        L.check(lib.opforge_overflow_stats_cpu_multi(descs, len(tensors), out))
    return [TensorStats(s) for s in out]


class PendingStats:
    """Statistics launched now and read later (the deferred report mode): CUDA tensors are scanned
    by an asynchronous launch on the current stream into a device buffer, without a host
    synchronisation and without keeping the tensors alive; read() copies every buffer back at once.
    Host tensors and arrays are scanned at once (nothing to wait for)."""

    def __init__(self):
        self._host = {}      # slot -> TensorStats
        self._launches = []  # (device buffer of Stats, [slots])
        self._slots = 0

    def add(self, tensors, threshold=0.0):
        """Slots (ints) of tensors, in order; read()[slot] is the statistics of each."""
        slots = list(range(self._slots, self._slots + len(tensors)))
        self._slots += len(tensors)
        cuda = [(slot, t) for slot, t in zip(slots, tensors) if getattr(t, "is_cuda", False)]
        host = [(slot, t) for slot, t in zip(slots, tensors) if not getattr(t, "is_cuda", False)]
        if host:
            for (slot, _), st in zip(host, stats_many([t for _, t in host], threshold)):
                self._host[slot] = st
        by_device = {}
        for slot, t in cuda:
            by_device.setdefault(t.device, []).append((slot, t))
        for device, entries in by_device.items():
            self._launch(device, entries, threshold)
        return slots

    def _launch(self, device, entries, threshold):
        import torch
        # Copies made here (non-contiguous tensors) may be freed on return: the caching allocator
        # only reuses their memory for work queued after this launch on the same stream.
        ts = [t if t.is_contiguous() else t.contiguous() for _, t in entries]
        descs = (L.TensorDesc * len(ts))(*[
            L.TensorDesc(t.data_ptr() if t.numel() else 0, t.numel(), _torch_code(t), 0, threshold) for t in ts])
        out = torch.empty(len(ts) * ctypes.sizeof(L.Stats), dtype=torch.uint8, device=device)
        stream = torch.cuda.current_stream(device).cuda_stream
        with torch.cuda.device(device):
            L.check(L.lib().opforge_overflow_stats_cuda_multi(descs, len(ts), ctypes.c_void_p(out.data_ptr()),
                                                              ctypes.c_void_p(stream)))
        self._launches.append((out, [slot for slot, _ in entries]))

    def read(self):
        """TensorStats for every slot added: one device-to-host copy per device, one wait."""
        results = [None] * self._slots
        for slot, st in self._host.items():
            results[slot] = st
        if self._launches:
            import torch
            by_device = {}
            for out, slots in self._launches:
                by_device.setdefault(out.device, []).append((out, slots))
            for launches in by_device.values():
                host = torch.cat([out for out, _ in launches]).cpu().numpy().tobytes()
                size, k = ctypes.sizeof(L.Stats), 0
                for _, slots in launches:
                    for slot in slots:
                        results[slot] = TensorStats(L.Stats.from_buffer_copy(host, k * size))
                        k += 1
        self._host, self._launches, self._slots = {}, [], 0
        return results


def tensor_stats(var, threshold=0.0):
    """TensorStats of one torch tensor or numpy array (threshold <= 0: the dtype's max / 2)."""
    return stats_many([var], threshold)[0]
