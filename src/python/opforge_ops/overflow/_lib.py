"""ctypes binding of libopforge_overflow.so (C ABI in src/kernels/overflow/overflow.h), loaded
through the package's one loader (``opforge_ops._native``)."""
from __future__ import annotations

import ctypes

from .. import _native

ABI_VERSION = 1
ENOSPC = -28  # a frame buffer is full
F32, F16, BF16, F64, F8E4M3FN, F8E5M2 = 0, 1, 2, 3, 4, 5

# The name overflow's errors had before the package had one error type: every OpError (an op not
# built, a library that does not load, a failed call) is an OverflowLibError, so code that catches
# it keeps working.
OverflowLibError = _native.OpError


class Stats(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint64), ("nan_count", ctypes.c_uint64),
                ("posinf_count", ctypes.c_uint64), ("neginf_count", ctypes.c_uint64),
                ("zero_count", ctypes.c_uint64), ("subnormal_count", ctypes.c_uint64),
                ("over_threshold_count", ctypes.c_uint64), ("reserved", ctypes.c_uint64),
                ("abs_min", ctypes.c_double), ("abs_max", ctypes.c_double)]


class TensorDesc(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("count", ctypes.c_uint64), ("dtype", ctypes.c_int32),
                ("pad", ctypes.c_int32), ("threshold", ctypes.c_double)]


def _declare(lib: ctypes.CDLL) -> None:
    lib.opforge_overflow_last_error.restype = ctypes.c_char_p
    lib.opforge_overflow_cpu_isa.restype = ctypes.c_char_p
    lib.opforge_overflow_dtype_max.restype = ctypes.c_double
    lib.opforge_overflow_dtype_max.argtypes = [ctypes.c_int]
    lib.opforge_overflow_stats_cpu.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int,
                                               ctypes.c_double, ctypes.POINTER(Stats)]
    lib.opforge_overflow_stats_cpu_multi.argtypes = [ctypes.POINTER(TensorDesc), ctypes.c_int,
                                                     ctypes.POINTER(Stats)]
    lib.opforge_overflow_stats_cuda_sync.argtypes = [ctypes.POINTER(TensorDesc), ctypes.c_int,
                                                     ctypes.POINTER(Stats), ctypes.c_void_p]
    lib.opforge_overflow_stats_cuda_multi.argtypes = [ctypes.POINTER(TensorDesc), ctypes.c_int,
                                                      ctypes.c_void_p, ctypes.c_void_p]
    lib.opforge_overflow_frames_create.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
    lib.opforge_overflow_frames_read.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.opforge_overflow_frames_host.argtypes = [ctypes.c_void_p]
    lib.opforge_overflow_frames_host.restype = ctypes.c_void_p
    lib.opforge_overflow_frames_destroy.argtypes = [ctypes.c_void_p]
    lib.opforge_overflow_frames_destroy.restype = None
    lib.opforge_overflow_cuda_test_kernel.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64,
                                                      ctypes.c_uint64, ctypes.c_uint64,
                                                      ctypes.POINTER(ctypes.c_int), ctypes.c_void_p]


lib = _native.OpLibrary("overflow", ABI_VERSION, _declare)
"""The loaded library with argument types set (``lib()``); an OpError (OverflowLibError) when absent."""


def check(rc: int) -> None:
    """OverflowLibError with the library's message when a call returned a non-zero code."""
    if rc != 0:
        raise OverflowLibError(f"opforge_overflow: {lib.error(lib())} (code {rc})")
