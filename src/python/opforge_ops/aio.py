"""Asynchronous whole-file I/O with Linux native AIO (libaio) and O_DIRECT.

Reads a file into, or writes it from, a numpy array, a bytearray (any writable buffer) or a torch
CPU tensor, with several requests of ``block_size`` bytes in flight (``queue_depth``). Unaligned
buffers and file tails go through aligned bounce buffers; where the file system refuses O_DIRECT
the library falls back to buffered I/O and says so in ``last_note()``. Errors are ``OSError`` with
the errno and a message naming the file. libaio is opened at first use (libaio.so.1, then
Ubuntu 24.04's libaio.so.1t64); without it the first call raises ``OpUnavailableError``.
"""
import ctypes
import threading

from . import _native
from .utils import _address

__all__ = ['aligned_empty', 'available', 'file_size', 'read', 'read_into', 'write', 'last_note', 'last_used_direct',
           'DEFAULT_BLOCK_SIZE', 'DEFAULT_QUEUE_DEPTH']

DEFAULT_BLOCK_SIZE = 1 << 20
DEFAULT_QUEUE_DEPTH = 32
_BUFFERED = 1

_lib = None
_local = threading.local()


def _library():
    global _lib
    if _lib is None:
        lib = _native.load('aio')
        u64, vp, i = ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int
        lib.opforge_aio_last_error.restype = ctypes.c_char_p
        lib.opforge_aio_last_note.restype = ctypes.c_char_p
        lib.opforge_aio_file_size.argtypes = [ctypes.c_char_p, ctypes.POINTER(u64)]
        lib.opforge_aio_read.argtypes = [ctypes.c_char_p, vp, u64, u64, i, i, ctypes.POINTER(i)]
        lib.opforge_aio_write.argtypes = [ctypes.c_char_p, vp, u64, u64, i, i, ctypes.POINTER(i)]
        if lib.opforge_aio_available() != 0:
            raise _native.OpUnavailableError(lib.opforge_aio_last_error().decode(errors='replace'))
        _lib = lib
    return _lib


def available():
    """True when the aio library is built and libaio can be opened on this machine."""
    try:
        _library()
        return True
    except (ImportError, RuntimeError):
        return False


def _raise(lib, rc):
    raise OSError(-rc, lib.opforge_aio_last_error().decode(errors='replace'))


def _path(path):
    import os
    return os.fsencode(path)


def aligned_empty(nbytes, alignment=4096):
    """A new uint8 numpy array of nbytes whose data starts on an `alignment` boundary: O_DIRECT
    then reads and writes it in place, without bounce buffers (numpy's own large arrays usually
    start 16 bytes past a page)."""
    import numpy
    raw = numpy.empty(nbytes + alignment, numpy.uint8)
    skip = (-raw.ctypes.data) % alignment
    return raw[skip:skip + nbytes]


def file_size(path):
    lib = _library()
    size = ctypes.c_uint64()
    rc = lib.opforge_aio_file_size(_path(path), ctypes.byref(size))
    if rc:
        _raise(lib, rc)
    return size.value


def _finish(lib, direct):
    _local.direct = bool(direct.value)
    _local.note = lib.opforge_aio_last_note().decode(errors='replace')


def read_into(path, out, *, block_size=DEFAULT_BLOCK_SIZE, queue_depth=DEFAULT_QUEUE_DEPTH, direct=True):
    """Reads the whole file into the start of `out` (which must be at least as large); returns the
    number of bytes read (the file's size)."""
    lib = _library()
    size = file_size(path)
    addr, nbytes, keep = _address(out, writable=True)
    if nbytes < size:
        raise ValueError(f'{path}: the file has {size} bytes, the buffer only {nbytes}')
    used = ctypes.c_int()
    rc = lib.opforge_aio_read(_path(path), addr, size, block_size, queue_depth,
                              0 if direct else _BUFFERED, ctypes.byref(used))
    del keep
    if rc:
        _raise(lib, rc)
    _finish(lib, used)
    return size


def read(path, out=None, **options):
    """Reads the whole file; into `out` when given (returned), else into a new bytearray."""
    if out is None:
        out = bytearray(file_size(path))
    read_into(path, out, **options)
    return out


def write(path, buf, *, block_size=DEFAULT_BLOCK_SIZE, queue_depth=DEFAULT_QUEUE_DEPTH, direct=True):
    """Creates or truncates the file and writes all of `buf` to it; returns the bytes written."""
    lib = _library()
    addr, nbytes, keep = _address(buf, writable=False)
    used = ctypes.c_int()
    rc = lib.opforge_aio_write(_path(path), addr, nbytes, block_size, queue_depth,
                               0 if direct else _BUFFERED, ctypes.byref(used))
    del keep
    if rc:
        _raise(lib, rc)
    _finish(lib, used)
    return nbytes


def last_used_direct():
    """Whether the last read/write on this thread used O_DIRECT."""
    return getattr(_local, 'direct', None)


def last_note():
    """What the last read/write on this thread decided, e.g. the buffered fallback; '' if nothing."""
    return getattr(_local, 'note', '')
