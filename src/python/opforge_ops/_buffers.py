"""What the op libraries read and write: host buffers as (address, size), and the one test for
"is this a torch tensor" (or a numpy array) that every module of the package uses.

Neither torch nor numpy is imported here: an object can only be a torch tensor (a numpy array) if
torch (numpy) has been imported already, so both tests look in ``sys.modules``.

Addresses come from each kind's own interface: a torch tensor's ``data_ptr()``, the
``__array_interface__`` of numpy arrays (and of any other host array that exposes it), and the
buffer protocol (``memoryview``) for bytearray, bytes, mmap and the like.
"""
from __future__ import annotations

import ctypes
import math
import sys
from typing import Any, NamedTuple


class Buffer(NamedTuple):
    """A contiguous host buffer: its first byte, its size in bytes, and the object(s) that keep
    the memory alive (hold it until the native call returns)."""
    address: int
    nbytes: int
    keep: object


def torch_tensor_type() -> type | None:
    """``torch.Tensor`` when torch is imported, else None (never imports torch). Hot loops take it
    once and use ``isinstance(x, tensor_type)``; elsewhere use :func:`is_torch_tensor`."""
    torch = sys.modules.get("torch")
    tensor = getattr(torch, "Tensor", None) if torch is not None else None
    return tensor if isinstance(tensor, type) else None


def is_torch_tensor(obj: object) -> bool:
    """True for a ``torch.Tensor`` (parameters and other subclasses included)."""
    tensor = torch_tensor_type()
    return tensor is not None and isinstance(obj, tensor)


def is_numpy_array(obj: object) -> bool:
    """True for a ``numpy.ndarray`` (subclasses such as ``numpy.memmap`` included)."""
    numpy = sys.modules.get("numpy")
    ndarray = getattr(numpy, "ndarray", None) if numpy is not None else None
    return isinstance(ndarray, type) and isinstance(obj, ndarray)


def kind(obj: object) -> str:
    """'torch', 'numpy', or the type's name: what error messages and mixed-list checks name."""
    if is_torch_tensor(obj):
        return "torch"
    if is_numpy_array(obj):
        return "numpy"
    return type(obj).__name__


def _torch_buffer(t: Any) -> Buffer:
    if t.device.type != "cpu":
        raise ValueError(f"expected a CPU tensor, got one on {t.device}")
    if not t.is_contiguous():
        raise ValueError("expected a contiguous tensor (call .contiguous() first)")
    return Buffer(t.data_ptr(), t.numel() * t.element_size(), t)


def _array_interface_buffer(obj: object, face: dict[str, Any], writable: bool) -> Buffer:
    # "strides": None means C-contiguous (the array interface protocol, version 3).
    if face.get("strides") is not None:
        raise ValueError("expected a C-contiguous array (numpy.ascontiguousarray)")
    address, readonly = face["data"]
    if writable and readonly:
        raise ValueError("expected a writable array")
    itemsize = int(face["typestr"][2:])
    return Buffer(address or 0, math.prod(face["shape"]) * itemsize, obj)


def _memoryview_buffer(obj: Any, writable: bool) -> Buffer:
    mv = memoryview(obj)
    if not mv.c_contiguous:
        raise ValueError("expected a contiguous buffer")
    if mv.readonly:
        if writable:
            raise ValueError(f"expected a writable buffer, got a read-only {type(obj).__name__}")
        # ctypes takes the address of writable buffers only: bytes are read in place through a
        # char pointer, other read-only buffers through a copy.
        data = obj if isinstance(obj, bytes) else mv.tobytes()
        return Buffer(ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0, len(data), data)
    flat = mv.cast("B")
    holder = (ctypes.c_char * flat.nbytes).from_buffer(flat)
    return Buffer(ctypes.addressof(holder), flat.nbytes, (holder, flat))


def host_buffer(obj: object, writable: bool) -> Buffer:
    """The address and size of a contiguous host buffer: a torch CPU tensor, an array with
    ``__array_interface__`` (numpy), or any object with the buffer protocol. ValueError names what
    is wrong (a GPU tensor, a strided view, a read-only buffer where one is written)."""
    if is_torch_tensor(obj):
        return _torch_buffer(obj)
    face = getattr(obj, "__array_interface__", None)
    if isinstance(face, dict):
        return _array_interface_buffer(obj, face, writable)
    return _memoryview_buffer(obj, writable)
