"""Statistics of tensors and arrays through the native library (CPU or CUDA), one call per list.

The hooks call this once per frame, so the per-tensor Python work is kept small: descriptors are
packed with one struct call into a reused buffer, the library is called through a prototype that
takes plain addresses, and a tensor's statistics come back as a raw 10-tuple (`Raw`, the fields of
`opforge_overflow_stats` in order) that is only turned into text when a report is printed."""
from __future__ import annotations

import ctypes
import math
import struct
import threading
from typing import Any, Callable, Sequence, Tuple

from .._buffers import host_buffer, is_torch_tensor, torch_tensor_type
from . import _lib as L

Raw = Tuple[float, ...]  # a raw record: the 10 fields of opforge_overflow_stats, in order

_NP_CODES = {"float32": L.F32, "float16": L.F16, "float64": L.F64}
_TORCH_NAMES = {"float32": L.F32, "float16": L.F16, "bfloat16": L.BF16, "float64": L.F64,
                "float8_e4m3fn": L.F8E4M3FN, "float8_e5m2": L.F8E5M2}

# struct layouts of TensorDesc (pointer, count, dtype, pad, threshold) and Stats (8 counters, 2 doubles)
_DESC = struct.Struct("=QQiid")
_STATS_FIELDS = 10
_STATS_SIZE = 80
assert _DESC.size == ctypes.sizeof(L.TensorDesc) and _STATS_SIZE == ctypes.sizeof(L.Stats)
_UNPACK: dict[int, struct.Struct] = {}  # k -> Struct of k Stats records

# Raw tuple indices
COUNT, NAN, POSINF, NEGINF, ZERO, SUBNORMAL, OVER, _RESERVED, ABS_MIN, ABS_MAX = range(_STATS_FIELDS)


_FLAGS: dict[int, struct.Struct] = {}  # k -> Struct reading only the nan, +inf and -inf counters of k Stats records


def _flag_unpacker(k: int) -> struct.Struct:
    s = _FLAGS.get(k)
    if s is None:
        s = _FLAGS[k] = struct.Struct("=" + "8x3Q48x" * k)
    return s


_DESCS: dict[int, struct.Struct] = {}  # k -> Struct of k TensorDesc given (data, count, dtype), threshold 0


def desc_struct(k: int) -> struct.Struct:
    s = _DESCS.get(k)
    if s is None:
        s = _DESCS[k] = struct.Struct("=" + "QQi12x" * k)
    return s


def _unpacker(k: int) -> struct.Struct:
    s = _UNPACK.get(k)
    if s is None:
        s = _UNPACK[k] = struct.Struct("=" + "8Q2d" * k)
    return s


def abs_min_max(r: Raw) -> tuple[float, float]:
    """(abs_min, abs_max) of a raw record as torch's abs().min()/max() would give them."""
    if r[NAN]:
        return math.nan, math.nan
    inf = r[POSINF] + r[NEGINF]
    return (r[ABS_MIN] if r[COUNT] - inf else math.inf), (math.inf if inf else r[ABS_MAX])


class TensorStats:
    """Statistics of one tensor; abs_min/abs_max are what torch's abs().min()/max() would give."""
    __slots__ = ("count", "nan", "posinf", "neginf", "zero", "subnormal", "over", "abs_min", "abs_max")
    count: int
    nan: int
    posinf: int
    neginf: int
    zero: int
    subnormal: int
    over: int
    abs_min: float
    abs_max: float

    def __init__(self, s: Any) -> None:
        """s: a raw record (tuple) or a ctypes Stats."""
        if not isinstance(s, tuple):
            s = (s.count, s.nan_count, s.posinf_count, s.neginf_count, s.zero_count, s.subnormal_count,
                 s.over_threshold_count, 0, s.abs_min, s.abs_max)
        (self.count, self.nan, self.posinf, self.neginf, self.zero, self.subnormal, self.over) = s[:7]
        self.abs_min, self.abs_max = abs_min_max(s)

    @property
    def inf(self) -> int:
        return self.posinf + self.neginf

    def __repr__(self) -> str:
        return "TensorStats({})".format(", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__))


_torch_codes: dict[Any, int] | None = None  # torch.dtype -> code, built on first use (torch is imported by then)


def torch_codes() -> dict[Any, int]:
    """torch dtype -> the library's dtype code, for the dtypes this torch has (imports torch)."""
    global _torch_codes
    if _torch_codes is None:
        import torch
        _torch_codes = {getattr(torch, n): c for n, c in _TORCH_NAMES.items() if hasattr(torch, n)}
    return _torch_codes


def _strided() -> Any:
    import torch
    return torch.strided


def _torch_code(t: Any) -> int | None:
    return torch_codes().get(t.dtype)


def native_array(a: Any) -> Any:
    """The numpy array the library reads for `a` (byte-swapped to native order when needed), or None
    when its dtype is not one the library reads."""
    dt: Any = getattr(a, "dtype", None)
    if getattr(dt, "name", None) not in _NP_CODES:
        return None
    if not dt.isnative:  # byte order is part of the dtype: read the values, not the bytes
        a = a.astype(dt.newbyteorder("="))
    return a


def supported(var: Any) -> bool:
    """True when the native library can read var (a dense float torch tensor or a numpy array)."""
    if is_torch_tensor(var):
        import torch
        return _torch_code(var) is not None and var.layout == torch.strided
    return native_array(var) is not None


class _Scratch(threading.local):
    """Per-thread descriptor and output buffers, grown on demand and reused across calls."""

    def __init__(self) -> None:
        self.cap = 0
        self.grow(64)

    def grow(self, k: int) -> None:
        self.cap = max(k, 2 * self.cap)
        self.desc = (L.TensorDesc * self.cap)()
        self.out_bytes = bytearray(self.cap * _STATS_SIZE)
        self.out = (L.Stats * self.cap).from_buffer(self.out_bytes)
        self.out_view = memoryview(self.out_bytes)  # bytes(out_view[:n]): a copy without a ctypes call
        self.desc_addr = ctypes.addressof(self.desc)
        self.out_addr = ctypes.addressof(self.out)


_scratch = _Scratch()
_bare: dict[str, Callable[..., int]] = {}


def _bare_fn(name: str, nargs: int) -> Callable[..., int]:
    """A library function as a bare ctypes function of pointer/int arguments (no argument
    conversion per call: the hook calls these once per module)."""
    fn = _bare.get(name)
    if fn is None:
        args = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p][:nargs]
        fn = _bare[name] = ctypes.CFUNCTYPE(ctypes.c_int, *args)((name, L.lib()))
    return fn


def _cpu_fn() -> Callable[..., int]:
    return _bare_fn("opforge_overflow_stats_cpu_multi", 3)


def _cuda_fn() -> Callable[..., int]:
    """The synchronous CUDA read."""
    return _bare_fn("opforge_overflow_stats_cuda_sync", 4)


def _cuda_multi_fn() -> Callable[..., int]:
    """The asynchronous CUDA launch into a device buffer."""
    return _bare_fn("opforge_overflow_stats_cuda_multi", 4)


def _on_device(fn: Callable[..., int], device: int, desc_addr: int, k: int, out: int) -> int:
    """fn(descriptors, k, out, stream) on `device` (an index) and its current stream, with that device
    current (the library launches on the current device); the library's code."""
    import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # no Stream object: a few us less
    stream = raw(device) if raw is not None else torch.cuda.current_stream(device).cuda_stream
    if torch.cuda.current_device() == device:
        return fn(desc_addr, k, out, stream)
    with torch.cuda.device(device):
        return fn(desc_addr, k, out, stream)


def cuda_read(device: int, desc_addr: int, k: int, out_addr: int) -> int:
    """The synchronous CUDA read of k packed descriptors on `device`; the library's code."""
    return _on_device(_cuda_fn(), device, desc_addr, k, out_addr)


def _describe(tensors: Sequence[Any], threshold: float, desc: Any) -> list[Any]:
    """Packs the descriptors of tensors into desc; returns the objects whose memory is read (contiguous
    copies and byte-swapped arrays must live until the call returns)."""
    keep = []
    pack = _DESC.pack_into
    tensor: Any = torch_tensor_type()
    codes = torch_codes() if tensor is not None and any(isinstance(t, tensor) for t in tensors) else None
    for i, t in enumerate(tensors):
        if codes is not None and isinstance(t, tensor):
            code = codes.get(t.dtype)
            if code is None or t.layout != _strided() or t.is_meta:
                raise ValueError("opforge overflow statistics read dense float tensors with storage, not "
                                 f"{t.dtype} {t.layout} {t.device}")
            n = t.numel()
            if n and not t.is_contiguous():
                t = t.contiguous()
                keep.append(t)
            pack(desc, i * 32, t.data_ptr() if n else 0, n, code, 0, threshold)
        else:
            import numpy as np
            a = native_array(t)
            if a is None:
                what = getattr(t, "dtype", type(t))
                raise ValueError(f"opforge overflow statistics read float16/32/64 arrays, not {what!r}")
            a = np.ascontiguousarray(a)
            keep.append(a)
            address = host_buffer(a, writable=False).address if a.size else 0
            pack(desc, i * 32, address, a.size, _NP_CODES[a.dtype.name], 0, threshold)
    return keep


def raw_many(tensors: Sequence[Any], threshold: float = 0.0) -> list[Raw]:
    """Raw records (10-tuples, see module doc) of tensors on one device: one native call."""
    k = len(tensors)
    if not k:
        return []
    s = _scratch
    if k > s.cap:
        s.grow(k)
    keep = _describe(tensors, threshold, s.desc)
    t0 = tensors[0]
    if getattr(t0, "is_cuda", False):
        # the launch goes to the tensors' GPU, on its current stream
        rc = cuda_read(t0.get_device(), s.desc_addr, k, s.out_addr)
        if rc:
            L.check(rc)
    else:
        rc = _cpu_fn()(s.desc_addr, k, s.out_addr)
        if rc:
            L.check(rc)
    del keep
    vals = _unpacker(k).unpack_from(s.out)
    return [vals[j:j + _STATS_FIELDS] for j in range(0, k * _STATS_FIELDS, _STATS_FIELDS)]


def _check_one_device(tensors: Sequence[Any]) -> None:
    where = {str(t.device) if getattr(t, "is_cuda", False) else "cpu" for t in tensors}
    if len(where) > 1:
        raise ValueError(f"stats_many: tensors on {', '.join(sorted(where))}; pass one device's tensors per call")


def stats_many(tensors: Any, threshold: float = 0.0) -> list[TensorStats]:
    """TensorStats for each tensor (all on one device): one native call, one synchronisation."""
    tensors = list(tensors)
    _check_one_device(tensors)
    return [TensorStats(r) for r in raw_many(tensors, threshold)]


# Records of a deferred frame buffer: 4096 x 80 bytes = 320 KiB per device (on a GPU, as much
# again of pinned host memory, where the reads land), allocated at the first deferred frame and reused.
FRAME_RECORDS = 4096


class FrameBuffer:
    """A bounded buffer of statistics records for deferred frames, on one device, allocated once:
    add() puts the statistics of packed descriptors into the next records without waiting, read()
    returns every record added since the last read and empties it.

    device -1 is the CPU: the records are host memory filled by the statistics call at add() (a
    CPU tensor has nothing to wait for), so the deferred logic is the same, and testable, without
    a GPU. On a CUDA device the library's frames_* calls launch each add on the current stream and
    wait once per read (on every stream that was used)."""

    def __init__(self, device: int, capacity: int, cpu_fn: Callable[..., int] | None = None) -> None:
        self.device, self.capacity, self.used = device, capacity, 0
        self._handle: int | None = None
        if device < 0:
            self._records = (L.Stats * capacity)()
            self._base = ctypes.addressof(self._records)
            self._cpu = cpu_fn or _cpu_fn()
            self._host = self._base
            return
        import torch
        handle = ctypes.c_void_p()
        with torch.cuda.device(device):
            L.check(L.lib().opforge_overflow_frames_create(capacity, ctypes.byref(handle)))
        self._handle = handle.value
        self._host = L.lib().opforge_overflow_frames_host(handle)  # pinned: what reads copy into
        self._add = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)(
            ("opforge_overflow_frames_add", L.lib()))

    def add(self, desc_addr: int, k: int) -> int:
        """The index of the first of k records for the k descriptors packed at desc_addr (tensors
        alive until this returns), or -1 when they do not fit (read first)."""
        if self._handle is None:
            first = self.used
            if first + k > self.capacity:
                return -1
            rc = self._cpu(desc_addr, k, self._base + first * _STATS_SIZE)
            if rc:
                L.check(rc)
            self.used = first + k
            return first
        rc = _on_device(self._frames_add, self.device, desc_addr, k, 0)
        if rc < 0:
            if rc == L.ENOSPC:
                return -1
            L.check(rc)
        self.used = rc + k
        return rc

    def _frames_add(self, desc_addr: int, k: int, _out: int, stream: int) -> int:
        return self._add(self._handle, desc_addr, k, stream)

    def read(self) -> bytes:
        """The records added since the last read (80 bytes each, in order); empties the buffer."""
        n = self.used
        if self._handle is not None:
            import torch
            raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
            stream = raw(self.device) if raw is not None else torch.cuda.current_stream(self.device).cuda_stream
            with torch.cuda.device(self.device):
                got = L.lib().opforge_overflow_frames_read(self._handle, stream)
            if got < 0:
                self.used = 0
                L.check(got)
            n = got
        self.used = 0
        return ctypes.string_at(self._host, n * _STATS_SIZE) if n else b""

    def close(self) -> None:
        """Frees a GPU buffer (read it first when launches may still run)."""
        if self._handle is not None:
            L.lib().opforge_overflow_frames_destroy(self._handle)
            self._handle = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass


def tensor_stats(var: Any, threshold: float = 0.0) -> TensorStats:
    """TensorStats of one torch tensor or numpy array (threshold <= 0: the dtype's max / 2)."""
    return stats_many([var], threshold)[0]
