"""Asynchronous whole-file I/O with Linux native AIO (libaio) and O_DIRECT.

Reads a file into, or writes it from, a numpy array, a bytearray (any writable buffer) or a torch
CPU tensor, with several requests of ``block_size`` bytes in flight (``queue_depth``). Unaligned
buffers and file tails go through aligned bounce buffers; where the file system refuses O_DIRECT
the library falls back to buffered I/O and says so in ``last_note()``. Errors are ``OSError`` with
the errno and a message naming the file. libaio is opened at first use (libaio.so.1, then
Ubuntu 24.04's libaio.so.1t64); without it the first call raises ``OpUnavailableError``.
"""
from __future__ import annotations

import ctypes
import os
import threading
from typing import Any, NoReturn, Union

from . import _native
from ._buffers import host_buffer

__all__ = ['aligned_empty', 'available', 'file_size', 'read', 'read_into', 'write', 'last_note', 'last_used_direct',
           'DEFAULT_BLOCK_SIZE', 'DEFAULT_QUEUE_DEPTH']

PathLike = Union[str, bytes, 'os.PathLike[str]', 'os.PathLike[bytes]']

ABI_VERSION = 1
DEFAULT_BLOCK_SIZE = 1 << 20
DEFAULT_QUEUE_DEPTH = 32
_BUFFERED = 1

_local = threading.local()


def _declare(lib: ctypes.CDLL) -> None:
    u64, vp, i = ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int
    lib.opforge_aio_last_error.restype = ctypes.c_char_p
    lib.opforge_aio_last_note.restype = ctypes.c_char_p
    lib.opforge_aio_file_size.argtypes = [ctypes.c_char_p, ctypes.POINTER(u64)]
    lib.opforge_aio_read.argtypes = [ctypes.c_char_p, vp, u64, u64, i, i, ctypes.POINTER(i)]
    lib.opforge_aio_write.argtypes = [ctypes.c_char_p, vp, u64, u64, i, i, ctypes.POINTER(i)]
    if lib.opforge_aio_available() != 0:
        raise _native.OpUnavailableError(_library.error(lib))


_library = _native.OpLibrary('aio', ABI_VERSION, _declare)


def available() -> bool:
    """True when the aio library is built and libaio can be opened on this machine."""
    try:
        _library()
        return True
    except _native.OpError:
        return False


def _raise(lib: ctypes.CDLL, rc: int) -> NoReturn:
    raise OSError(-rc, _library.error(lib))


def _path(path: PathLike) -> bytes:
    return os.fsencode(path)


def aligned_empty(nbytes: int, alignment: int = 4096) -> Any:
    """A new uint8 numpy array of nbytes whose data starts on an `alignment` boundary: O_DIRECT
    then reads and writes it in place, without bounce buffers (numpy's own large arrays usually
    start 16 bytes past a page)."""
    import numpy
    raw = numpy.empty(nbytes + alignment, numpy.uint8)
    skip = (-host_buffer(raw, writable=True).address) % alignment
    return raw[skip:skip + nbytes]


def file_size(path: PathLike) -> int:
    """The file's size in bytes (OSError naming the file when it cannot be read)."""
    lib = _library()
    size = ctypes.c_uint64()
    rc = lib.opforge_aio_file_size(_path(path), ctypes.byref(size))
    if rc:
        _raise(lib, rc)
    return int(size.value)


def _finish(lib: ctypes.CDLL, direct: ctypes.c_int) -> None:
    _local.direct = bool(direct.value)
    _local.note = lib.opforge_aio_last_note().decode(errors='replace')


def read_into(path: PathLike, out: Any, *, block_size: int = DEFAULT_BLOCK_SIZE,
              queue_depth: int = DEFAULT_QUEUE_DEPTH, direct: bool = True) -> int:
    """Reads the whole file into the start of `out` (which must be at least as large); returns the
    number of bytes read (the file's size)."""
    lib = _library()
    size = file_size(path)
    addr, nbytes, keep = host_buffer(out, writable=True)
    if nbytes < size:
        raise ValueError(f'{os.fsdecode(path)}: the file has {size} bytes, the buffer only {nbytes}')
    used = ctypes.c_int()
    rc = lib.opforge_aio_read(_path(path), addr, size, block_size, queue_depth,
                              0 if direct else _BUFFERED, ctypes.byref(used))
    del keep
    if rc:
        _raise(lib, rc)
    _finish(lib, used)
    return size


def read(path: PathLike, out: Any = None, **options: Any) -> Any:
    """Reads the whole file; into `out` when given (returned), else into a new bytearray."""
    if out is None:
        out = bytearray(file_size(path))
    read_into(path, out, **options)
    return out


def write(path: PathLike, buf: Any, *, block_size: int = DEFAULT_BLOCK_SIZE,
          queue_depth: int = DEFAULT_QUEUE_DEPTH, direct: bool = True) -> int:
    """Creates or truncates the file and writes all of `buf` to it; returns the bytes written."""
    lib = _library()
    addr, nbytes, keep = host_buffer(buf, writable=False)
    used = ctypes.c_int()
    rc = lib.opforge_aio_write(_path(path), addr, nbytes, block_size, queue_depth,
                               0 if direct else _BUFFERED, ctypes.byref(used))
    del keep
    if rc:
        _raise(lib, rc)
    _finish(lib, used)
    return nbytes


def last_used_direct() -> bool | None:
    """Whether the last read/write on this thread used O_DIRECT."""
    return getattr(_local, 'direct', None)


def last_note() -> str:
    """What the last read/write on this thread decided, e.g. the buffered fallback; '' if nothing."""
    return getattr(_local, 'note', '')
