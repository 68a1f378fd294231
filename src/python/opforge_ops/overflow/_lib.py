"""ctypes binding of libopforge_overflow.so (C ABI in src/kernels/overflow/overflow.h)."""
import ctypes
import os

F32, F16, BF16, F64, F8E4M3FN, F8E5M2 = 0, 1, 2, 3, 4, 5


class Stats(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint64), ("nan_count", ctypes.c_uint64),
                ("posinf_count", ctypes.c_uint64), ("neginf_count", ctypes.c_uint64),
                ("zero_count", ctypes.c_uint64), ("subnormal_count", ctypes.c_uint64),
                ("over_threshold_count", ctypes.c_uint64), ("reserved", ctypes.c_uint64),
                ("abs_min", ctypes.c_double), ("abs_max", ctypes.c_double)]


class TensorDesc(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("count", ctypes.c_uint64), ("dtype", ctypes.c_int32),
                ("pad", ctypes.c_int32), ("threshold", ctypes.c_double)]


class OverflowLibError(RuntimeError):
    pass


_lib = None


def _find():
    try:  # the package loader, once merged from the wheel work
        from .. import _native  # type: ignore
    except ImportError:
        _native = None
    if _native is not None:
        try:
            return _native.load("overflow")
        except Exception as e:  # OpNotBuiltError and loader failures: one error type for callers
            raise OverflowLibError(str(e)) from e
    names = []
    env = os.environ.get("OPFORGE_OPS_LIB_DIR")
    if env:
        names.append(os.path.join(env, "libopforge_overflow.so"))
    names.append(os.path.join(os.path.dirname(os.path.dirname(__file__)), "_lib", "libopforge_overflow.so"))
    for n in names:
        if os.path.exists(n):
            return ctypes.CDLL(n)
    raise OverflowLibError("libopforge_overflow.so not found (looked in: %s); build it with "
                           "DS_BUILD_OVERFLOW=1" % ", ".join(names))


def lib():
    """The loaded library with argument types set; raises OverflowLibError when absent."""
    global _lib
    if _lib is None:
        l = _find()
        l.opforge_overflow_last_error.restype = ctypes.c_char_p
        l.opforge_overflow_cpu_isa.restype = ctypes.c_char_p
        l.opforge_overflow_dtype_max.restype = ctypes.c_double
        l.opforge_overflow_dtype_max.argtypes = [ctypes.c_int]
        l.opforge_overflow_stats_cpu.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int,
                                                 ctypes.c_double, ctypes.POINTER(Stats)]
        l.opforge_overflow_stats_cpu_multi.argtypes = [ctypes.POINTER(TensorDesc), ctypes.c_int,
                                                       ctypes.POINTER(Stats)]
        l.opforge_overflow_stats_cuda_sync.argtypes = [ctypes.POINTER(TensorDesc), ctypes.c_int,
                                                       ctypes.POINTER(Stats), ctypes.c_void_p]
        l.opforge_overflow_stats_cuda_multi.argtypes = [ctypes.POINTER(TensorDesc), ctypes.c_int,
                                                        ctypes.c_void_p, ctypes.c_void_p]
        l.opforge_overflow_cuda_test_kernel.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64,
                                                        ctypes.c_uint64, ctypes.c_uint64,
                                                        ctypes.POINTER(ctypes.c_int), ctypes.c_void_p]
        if l.opforge_overflow_abi_version() != 1:
            raise OverflowLibError("libopforge_overflow ABI %d, expected 1" % l.opforge_overflow_abi_version())
        _lib = l
    return _lib


def check(rc):
    if rc != 0:
        raise OverflowLibError("opforge_overflow: %s (code %d)" % (lib().opforge_overflow_last_error().decode(), rc))
