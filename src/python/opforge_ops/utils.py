"""flatten / unflatten: copy a list of tensors or arrays into one contiguous 1-D buffer and back.

What DeepSpeed's ``DS_BUILD_UTILS`` op gives its users (``flatten(tensors)`` and
``unflatten(flat, tensors)``), over torch CPU tensors or numpy arrays; large totals are copied by
several threads in the native library. Neither torch nor numpy is imported until used.
"""
from __future__ import annotations

import ctypes
from typing import Any, Iterable, Sequence

from . import _native
from ._buffers import Buffer, host_buffer, is_torch_tensor, kind

__all__ = ['flatten', 'flatten_into', 'unflatten', 'unflatten_into']

ABI_VERSION = 1


def _declare(lib: ctypes.CDLL) -> None:
    vp, sz = ctypes.c_void_p, ctypes.c_size_t
    lib.opforge_utils_flatten.argtypes = [ctypes.POINTER(vp), ctypes.POINTER(sz), sz, vp, ctypes.c_int]
    lib.opforge_utils_unflatten.argtypes = [vp, ctypes.POINTER(vp), ctypes.POINTER(sz), sz, ctypes.c_int]
    lib.opforge_utils_last_error.restype = ctypes.c_char_p


_library = _native.OpLibrary('utils', ABI_VERSION, _declare)


def _check(rc: int, lib: ctypes.CDLL) -> None:
    if rc != 0:
        raise RuntimeError(_library.error(lib))


def _members(tensors: Iterable[Any], writable: bool) -> tuple[list[Any], Any, Any, list[Buffer]]:
    items = list(tensors)
    kinds = {kind(t) for t in items}
    if len(kinds) > 1 or (kinds and not kinds <= {'torch', 'numpy'}):
        raise TypeError(f'expected torch CPU tensors or numpy arrays of one kind, got {sorted(kinds)}')
    dtypes = {str(t.dtype) for t in items}
    if len(dtypes) > 1:
        raise TypeError(f'all members must have one dtype, got {sorted(dtypes)}')
    addrs = [host_buffer(t, writable) for t in items]
    n = len(items)
    ptrs = (ctypes.c_void_p * max(n, 1))(*[a.address for a in addrs])
    sizes = (ctypes.c_size_t * max(n, 1))(*[a.nbytes for a in addrs])
    return items, ptrs, sizes, addrs


def flatten_into(tensors: Iterable[Any], out: Any, threads: int = 0) -> Any:
    """Copies every member's elements in order into the existing contiguous `out`, which must
    hold at least their total (no allocation: the fast path for a reused buffer)."""
    items, ptrs, sizes, keep = _members(tensors, writable=False)
    addr, nbytes, _ = host_buffer(out, writable=True)
    need = sum(sizes[i] for i in range(len(items)))
    if nbytes < need:
        raise ValueError(f'out has {nbytes} bytes, the members need {need}')
    lib = _library()
    _check(lib.opforge_utils_flatten(ptrs, sizes, len(items), addr, threads), lib)
    del keep
    return out


def flatten(tensors: Iterable[Any], threads: int = 0) -> Any:
    """One new contiguous 1-D tensor (or array) holding every member's elements in order.
    Non-contiguous torch members are made contiguous first; empty members are fine."""
    items = list(tensors)
    if not items:
        raise ValueError('flatten needs at least one member (its dtype decides the result)')
    if is_torch_tensor(items[0]):
        import torch
        items = [t.contiguous() for t in items]
        out = torch.empty(sum(t.numel() for t in items), dtype=items[0].dtype)
    else:
        import numpy
        items = [numpy.ascontiguousarray(a) for a in items]
        out = numpy.empty(sum(a.size for a in items), dtype=items[0].dtype)
    return flatten_into(items, out, threads)


def unflatten_into(flat: Any, outs: Sequence[Any], threads: int = 0) -> None:
    """Copies consecutive stretches of `flat` into the contiguous members of `outs` (in place)."""
    items, ptrs, sizes, keep = _members(outs, writable=True)
    addr, nbytes, _ = host_buffer(flat, writable=False)
    need = sum(sizes[i] for i in range(len(items)))
    if nbytes < need:
        raise ValueError(f'flat buffer has {nbytes} bytes, the members need {need}')
    lib = _library()
    _check(lib.opforge_utils_unflatten(addr, ptrs, sizes, len(items), threads), lib)
    del keep


def unflatten(flat: Any, tensors: Iterable[Any], threads: int = 0) -> list[Any]:
    """New tensors (or arrays) shaped like each of `tensors`, filled from `flat` in order
    (DeepSpeed's ``unflatten(flat, tensors)``)."""
    like = list(tensors)
    if is_torch_tensor(flat):
        import torch
        outs = [torch.empty(t.shape, dtype=flat.dtype) for t in like]
    else:
        import numpy
        outs = [numpy.empty(t.shape, dtype=flat.dtype) for t in like]
    if outs:
        unflatten_into(flat, outs, threads)
    return outs
