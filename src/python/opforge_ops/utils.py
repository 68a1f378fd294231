"""flatten / unflatten: copy a list of tensors or arrays into one contiguous 1-D buffer and back.

What DeepSpeed's ``DS_BUILD_UTILS`` op gives its users (``flatten(tensors)`` and
``unflatten(flat, tensors)``), over torch CPU tensors or numpy arrays; large totals are copied by
several threads in the native library. Neither torch nor numpy is imported until used.
"""
import ctypes

from . import _native

__all__ = ['flatten', 'flatten_into', 'unflatten', 'unflatten_into']

_lib = None


def _library():
    global _lib
    if _lib is None:
        lib = _native.load('utils')
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        lib.opforge_utils_flatten.argtypes = [ctypes.POINTER(vp), ctypes.POINTER(sz), sz, vp, ctypes.c_int]
        lib.opforge_utils_unflatten.argtypes = [vp, ctypes.POINTER(vp), ctypes.POINTER(sz), sz, ctypes.c_int]
        lib.opforge_utils_last_error.restype = ctypes.c_char_p
        _lib = lib
    return _lib


def _is_torch(x):
    return type(x).__module__.split('.')[0] == 'torch' and hasattr(x, 'data_ptr')


def _is_numpy(x):
    return type(x).__module__.split('.')[0] == 'numpy' and hasattr(x, 'ctypes')


def _address(obj, writable):
    """(address, nbytes, keepalive) of a contiguous CPU buffer: a torch tensor, a numpy array, or
    any object with the buffer protocol (bytearray, bytes, memoryview). Shared by the op modules."""
    if _is_torch(obj):
        if obj.device.type != 'cpu':
            raise ValueError(f'expected a CPU tensor, got one on {obj.device}')
        if not obj.is_contiguous():
            raise ValueError('expected a contiguous tensor (call .contiguous() first)')
        return obj.data_ptr(), obj.numel() * obj.element_size(), obj
    if _is_numpy(obj):
        if not obj.flags.c_contiguous:
            raise ValueError('expected a C-contiguous numpy array (numpy.ascontiguousarray)')
        if writable and not obj.flags.writeable:
            raise ValueError('expected a writable numpy array')
        return obj.ctypes.data, obj.nbytes, obj
    mv = memoryview(obj)
    if not mv.c_contiguous:
        raise ValueError('expected a contiguous buffer')
    if mv.readonly:
        if writable:
            raise ValueError(f'expected a writable buffer, got a read-only {type(obj).__name__}')
        data = bytes(mv) if not isinstance(obj, bytes) else obj
        return ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0, len(data), data
    flat = mv.cast('B')
    holder = (ctypes.c_char * flat.nbytes).from_buffer(flat)
    return ctypes.addressof(holder), flat.nbytes, (holder, flat)


def _check(rc, lib):
    if rc != 0:
        raise RuntimeError(lib.opforge_utils_last_error().decode(errors='replace'))


def _members(tensors, writable):
    items = list(tensors)
    kinds = {('torch' if _is_torch(t) else 'numpy' if _is_numpy(t) else type(t).__name__) for t in items}
    if len(kinds) > 1 or (kinds and not kinds <= {'torch', 'numpy'}):
        raise TypeError(f'expected torch CPU tensors or numpy arrays of one kind, got {sorted(kinds)}')
    dtypes = {str(t.dtype) for t in items}
    if len(dtypes) > 1:
        raise TypeError(f'all members must have one dtype, got {sorted(dtypes)}')
    addrs = [_address(t, writable) for t in items]
    n = len(items)
    ptrs = (ctypes.c_void_p * max(n, 1))(*[a[0] for a in addrs])
    sizes = (ctypes.c_size_t * max(n, 1))(*[a[1] for a in addrs])
    return items, ptrs, sizes, addrs


def flatten_into(tensors, out, threads=0):
    """Copies every member's elements in order into the existing contiguous `out`, which must
    hold at least their total (no allocation: the fast path for a reused buffer)."""
    items, ptrs, sizes, keep = _members(tensors, writable=False)
    addr, nbytes, _ = _address(out, writable=True)
    need = sum(sizes[i] for i in range(len(items)))
    if nbytes < need:
        raise ValueError(f'out has {nbytes} bytes, the members need {need}')
    lib = _library()
    _check(lib.opforge_utils_flatten(ptrs, sizes, len(items), addr, threads), lib)
    del keep
    return out


def flatten(tensors, threads=0):
    """One new contiguous 1-D tensor (or array) holding every member's elements in order.
    Non-contiguous torch members are made contiguous first; empty members are fine."""
    items = list(tensors)
    if not items:
        raise ValueError('flatten needs at least one member (its dtype decides the result)')
    if _is_torch(items[0]):
        import torch
        items = [t.contiguous() for t in items]
        out = torch.empty(sum(t.numel() for t in items), dtype=items[0].dtype)
    else:
        import numpy
        items = [numpy.ascontiguousarray(a) for a in items]
        out = numpy.empty(sum(a.size for a in items), dtype=items[0].dtype)
    items, ptrs, sizes, keep = _members(items, writable=False)
    addr, nbytes, _ = _address(out, writable=True)
    lib = _library()
    _check(lib.opforge_utils_flatten(ptrs, sizes, len(items), addr, threads), lib)
    del keep
    return out


def unflatten_into(flat, outs, threads=0):
    """Copies consecutive stretches of `flat` into the contiguous members of `outs` (in place)."""
    items, ptrs, sizes, keep = _members(outs, writable=True)
    addr, nbytes, _ = _address(flat, writable=False)
    need = sum(sizes[i] for i in range(len(items)))
    if nbytes < need:
        raise ValueError(f'flat buffer has {nbytes} bytes, the members need {need}')
    lib = _library()
    _check(lib.opforge_utils_unflatten(addr, ptrs, sizes, len(items), threads), lib)
    del keep


def unflatten(flat, tensors, threads=0):
    """New tensors (or arrays) shaped like each of `tensors`, filled from `flat` in order
    (DeepSpeed's ``unflatten(flat, tensors)``)."""
    like = list(tensors)
    if _is_torch(flat):
        import torch
        outs = [torch.empty(t.shape, dtype=flat.dtype) for t in like]
    else:
        import numpy
        outs = [numpy.empty(t.shape, dtype=flat.dtype) for t in like]
    if outs:
        unflatten_into(flat, outs, threads)
    return outs
