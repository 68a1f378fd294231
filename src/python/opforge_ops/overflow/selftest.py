"""GPU self-test: run the bundled test kernels and compare GPU statistics with the CPU oracle."""
from __future__ import annotations

import ctypes
from typing import Callable

from .._buffers import host_buffer
from . import _lib as L
from ._stats import TensorStats

# case -> (name, check on TensorStats of the produced array)
_CASES: dict[int, tuple[str, Callable[[TensorStats], bool]]] = {
    1: ("fp16 dropout rescale of 6.27e4 -> inf", lambda s: s.posinf == s.count),
    2: ("fp16 product 300*300 -> inf", lambda s: s.posinf == s.count),
    3: ("fp16 flush to subnormal", lambda s: s.subnormal + s.zero == s.count and s.subnormal > 0),
    4: ("bf16 flush to subnormal", lambda s: s.subnormal + s.zero == s.count and s.subnormal > 0),
    5: ("inf - inf -> nan", lambda s: s.nan == s.count),
    6: ("nan planted", lambda s: s.nan == 1),
    7: ("-inf planted", lambda s: s.neginf == 1),
}
_BYTES = {L.F16: 2, L.BF16: 2, L.F32: 4}


def selftest(n: int = 1 << 20 | 3, verbose: bool = False) -> list[str]:
    """Runs every test kernel on the current GPU (several sizes and planted positions: first, last,
    inside the unaligned tail) and returns a list of failure strings (empty = pass). Raises
    OverflowLibError when there is no GPU or no library."""
    import torch

    lib = L.lib()
    if lib.opforge_overflow_cuda_device_count() <= 0 or not torch.cuda.is_available():
        raise L.OverflowLibError("selftest needs a CUDA GPU: " + L.lib.error(lib))
    failures: list[str] = []
    stream = torch.cuda.current_stream().cuda_stream

    def compare(label: str, ptr: int, host: int, dtype: int, ok: Callable[[TensorStats], bool]) -> None:
        desc = (L.TensorDesc * 1)(L.TensorDesc(ptr, n, dtype, 0, 0.0))
        gpu = (L.Stats * 1)()
        L.check(lib.opforge_overflow_stats_cuda_sync(desc, 1, gpu, stream))
        cpu = (L.Stats * 1)()
        L.check(lib.opforge_overflow_stats_cpu(host, n, dtype, 0.0, cpu))
        g, c = gpu[0], cpu[0]
        if not all(getattr(g, f) == getattr(c, f) for f, *_ in L.Stats._fields_ if f != "reserved"):
            failures.append(f"{label}: GPU and CPU differ: {TensorStats(g)} vs {TensorStats(c)}")
        if not ok(TensorStats(c)):
            failures.append(f"{label}: {TensorStats(c)}")
        if verbose:
            print(label, TensorStats(g))

    for which, (name, ok) in _CASES.items():
        dt = ctypes.c_int()
        L.check(lib.opforge_overflow_cuda_test_kernel(which, None, 0, 0, 0, ctypes.byref(dt), stream))
        size = _BYTES[dt.value]
        for index in ([0, n - 1, n - 2] if which >= 6 else [0]):
            buf = torch.empty(n * 4 + 64, dtype=torch.uint8, device="cuda")
            # Starts off the 16-byte vector boundary by whole elements (what torch views give), and
            # then the same bytes copied to an odd address (read element by element).
            for k in (0, 1, 2):
                offset = k * size
                L.check(lib.opforge_overflow_cuda_test_kernel(which, buf.data_ptr() + offset, n, index, 7,
                                                              None, stream))
                host = buf.cpu().numpy()
                label = f"case {which} ({name}) index {index} offset {offset}"
                compare(label, buf.data_ptr() + offset, host_buffer(host, False).address + offset, dt.value, ok)
            odd = torch.empty_like(buf)
            odd[1:1 + n * size].copy_(buf[2 * size:2 * size + n * size])
            host = odd.cpu().numpy()
            compare(f"case {which} ({name}) index {index} offset 1 (copied)", odd.data_ptr() + 1,
                    host_buffer(host, False).address + 1, dt.value, ok)
    return failures
