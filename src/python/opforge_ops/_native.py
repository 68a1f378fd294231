"""Finding and loading the op libraries, and checking what a CUDA op needs at run time.

Each op is one shared library ``libopforge_<op>.so`` with a C ABI, looked up first in the folders
of ``$OPFORGE_OPS_LIB_DIR`` (development and tests; ``os.pathsep``-separated), then in the
package's ``_lib/``. Every op module loads its library through one :class:`OpLibrary`, which
checks the library's ``opforge_<op>_abi_version()`` against the version its bindings were written
for. Everything that goes wrong with an op library is an :class:`OpError`.

CUDA ops link cudart statically and need only the driver, which they open with dlopen:
``require_cuda(op)`` checks it (driver new enough for the toolkit's CUDA major, a GPU whose
architecture the wheel holds code for) and says exactly what is missing.
"""
from __future__ import annotations

import ctypes
import os
import threading
from typing import Any, Callable, Iterable, Mapping, Sequence, Tuple, Union

from .build_info import BUILD_INFO

Capability = Tuple[int, int]
DriverVersion = Union[Capability, str]  # (major, minor), or why libcuda.so.1 could not be used

_PACKAGE_LIB_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), '_lib')
_loaded: dict[str, ctypes.CDLL] = {}
_lock = threading.Lock()


class OpError(RuntimeError):
    """Base of every error about an op library: not built, not loadable, another ABI, a machine
    that cannot run it, or a call the library refused. ``opforge_ops.overflow.OverflowLibError``
    names this same class."""


class OpNotBuiltError(OpError, ImportError):
    """The op's library is not in this installation (also an ImportError, so that
    ``except ImportError`` around an import of the op catches it)."""

    def __init__(self, op: str, searched: Iterable[str]) -> None:
        self.op = op
        self.searched = list(searched)
        where = ', '.join(self.searched) if self.searched else '(nowhere)'
        var = build_var(op)
        message = (f"opforge_ops: op '{op}' is not built into this installation "
                   f"(no {library_name(op)} in {where}); rebuild the wheel with "
                   f"{var}=1 (e.g. `{var}=1 opforge build RECIPE`)")
        super().__init__(message)
        self.msg = message  # ImportError's attribute (its __init__ is not the one that runs)


class OpLoadError(OpError):
    """The op's library is there but unusable: the dynamic loader refuses it, or its ABI version
    is not the one this package's bindings were written for (a library from another build)."""


class OpUnavailableError(OpError):
    """The op is built, but this machine cannot run it (driver, GPU architecture, libaio)."""


def library_name(op: str) -> str:
    return f'libopforge_{op}.so'


def build_var(op: str) -> str:
    """The build variable that puts `op` into a wheel: the one its manifest names, as the build
    recorded it in ``build_info['build_vars']``, else opforge's default ``DS_BUILD_<OP>``."""
    recorded = BUILD_INFO.get('build_vars')
    if isinstance(recorded, dict) and isinstance(recorded.get(op), str):
        return str(recorded[op])
    return 'DS_BUILD_' + op.upper()


def lib_dirs() -> list[str]:
    """The folders searched, in order."""
    dirs = [d for d in os.environ.get('OPFORGE_OPS_LIB_DIR', '').split(os.pathsep) if d]
    dirs.append(_PACKAGE_LIB_DIR)
    return dirs


def find(op: str) -> str | None:
    """The path of the op's library, or None."""
    for d in lib_dirs():
        path = os.path.join(d, library_name(op))
        if os.path.isfile(path):
            return path
    return None


def available_ops() -> list[str]:
    """Names of the ops whose library can be found, sorted."""
    ops = set()
    for d in lib_dirs():
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for name in names:
            if name.startswith('libopforge_') and name.endswith('.so'):
                ops.add(name[len('libopforge_'):-len('.so')])
    return sorted(ops)


def abi_version(op: str, lib: ctypes.CDLL) -> int:
    """What the library's ``opforge_<op>_abi_version()`` returns; OpLoadError when it has none."""
    try:
        fn = getattr(lib, f'opforge_{op}_abi_version')
    except AttributeError as e:
        raise OpLoadError(f"opforge_ops: {lib._name} has no opforge_{op}_abi_version(): it is not "
                          f"an opforge op library for '{op}'") from e
    fn.restype = ctypes.c_int
    fn.argtypes = []
    return int(fn())


def load(op: str, abi: int | None = None) -> ctypes.CDLL:
    """The op's library as a ctypes.CDLL, loaded once per process. With `abi`, its ABI version must
    be that one. OpNotBuiltError when it is absent, OpLoadError when it cannot be used."""
    with _lock:
        lib = _loaded.get(op)
        if lib is None:
            path = find(op)
            if path is None:
                raise OpNotBuiltError(op, lib_dirs())
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                raise OpLoadError(f"opforge_ops: op '{op}': {path} cannot be loaded: {e}") from e
            _loaded[op] = lib
    if abi is not None:
        have = abi_version(op, lib)
        if have != abi:
            raise OpLoadError(
                f"opforge_ops: {lib._name} has ABI version {have}, but this opforge_ops expects {abi}: "
                f"the library and the Python package come from different builds; reinstall the "
                f"wheel (or point OPFORGE_OPS_LIB_DIR at libraries built from the same source)")
    return lib


class OpLibrary:
    """One op's library as its module uses it: loaded at first call, ABI checked, then `declare`
    (argument and result types, a run-time availability check) run once; later calls return the
    same CDLL. Raises what :func:`load` or `declare` raise, every time until it succeeds."""

    def __init__(self, op: str, abi: int, declare: Callable[[ctypes.CDLL], None]) -> None:
        self.op = op
        self.abi = abi
        self._declare = declare
        self._lib: ctypes.CDLL | None = None

    def __call__(self) -> ctypes.CDLL:
        lib = self._lib
        if lib is None:
            lib = load(self.op, self.abi)
            self._declare(lib)
            self._lib = lib
        return lib

    def error(self, lib: ctypes.CDLL) -> str:
        """The library's last error message (``opforge_<op>_last_error()``, thread-local there)."""
        raw = getattr(lib, f'opforge_{self.op}_last_error')()
        return raw.decode(errors='replace') if isinstance(raw, bytes) else str(raw)


# ----------------------------------------------------------------------------- CUDA checks

def _parse_cc(text: str) -> Capability:
    """'8.6' → (8, 6); '9.0a' → (9, 0)."""
    major, _, minor = text.partition('.')
    digits = ''.join(c for c in minor if c.isdigit())
    return int(major), int(digits or 0)


def arch_supports(arch_list: Sequence[str], capability: Capability) -> bool:
    """Whether code for `arch_list` (e.g. ['8.0', '9.0+PTX']) runs on a GPU of `capability`.

    SASS for X.Y runs on X.Z with Z >= Y (not the 'a'/'f' variants, which need exactly X.Y);
    PTX for X.Y is compiled by the driver for any capability >= X.Y (for X.Ya, only on X.Y: its
    features exist there alone).
    """
    for entry in arch_list:
        ptx = entry.endswith('+PTX')
        base = entry[:-4] if ptx else entry
        specific = base[-1:] in ('a', 'f')
        cc = _parse_cc(base)
        if ptx and (capability == cc if specific else capability >= cc):
            return True
        if specific and capability == cc:
            return True
        if not specific and capability[0] == cc[0] and capability[1] >= cc[1]:
            return True
    return False


def cuda_problem(op: str, info: Mapping[str, Any], driver: DriverVersion,
                 devices: Sequence[Capability]) -> str | None:
    """The message saying why `op` cannot run, or None. Pure, so that tests can feed it any world.

    driver: (major, minor) the driver supports, or a string saying why libcuda.so.1 did not load.
    devices: list of (major, minor) compute capabilities of the visible GPUs.
    """
    if isinstance(driver, str):
        return (f"opforge_ops: op '{op}' needs the NVIDIA driver (libcuda.so.1), which cannot be "
                f"loaded: {driver}. Install the NVIDIA driver on this machine.")
    toolkit = str(info.get('toolkit_version') or '')
    if toolkit:
        need = _parse_cc(toolkit)
        if driver[0] < need[0]:
            return (f"opforge_ops: op '{op}' was built with CUDA {toolkit} and needs a driver for "
                    f"CUDA {need[0]}.x or newer; this driver supports CUDA {driver[0]}.{driver[1]}. "
                    f"Update the NVIDIA driver, or install a wheel built for CUDA {driver[0]} "
                    f"(local version +cu{driver[0]}).")
    if not devices:
        visible = os.environ.get('CUDA_VISIBLE_DEVICES')
        extra = f' (CUDA_VISIBLE_DEVICES={visible!r})' if visible is not None else ''
        return f"opforge_ops: op '{op}' needs a CUDA GPU, but the driver reports none{extra}."
    arch_list = [str(a) for a in info.get('arch_list') or []]
    for index, cc in enumerate(devices):
        if not arch_supports(arch_list, cc):
            have = ';'.join(arch_list) or '(none)'
            return (f"opforge_ops: op '{op}' has no code for GPU {index} (compute capability "
                    f"{cc[0]}.{cc[1]}): this wheel holds {have}. Rebuild with "
                    f"TORCH_CUDA_ARCH_LIST=\"{cc[0]}.{cc[1]}\" (or add {cc[0]}.{cc[1]} to the "
                    f"recipe's [arch] list).")
    return None


def driver_version() -> DriverVersion:
    """(major, minor) of the CUDA version the driver supports, or a string saying why not."""
    try:
        cuda = ctypes.CDLL('libcuda.so.1')  # never the toolkit's libcuda.so stub
    except OSError as e:
        return str(e)
    v = ctypes.c_int(0)
    rc = cuda.cuDriverGetVersion(ctypes.byref(v))
    if rc != 0:
        return f'cuDriverGetVersion returned {rc}'
    return (v.value // 1000, (v.value % 1000) // 10)


def device_capabilities() -> list[Capability]:
    """Compute capabilities of the visible GPUs ([] when none or no driver)."""
    try:
        cuda = ctypes.CDLL('libcuda.so.1')
    except OSError:
        return []
    if cuda.cuInit(0) != 0:
        return []
    count = ctypes.c_int(0)
    if cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return []
    caps = []
    for i in range(count.value):
        dev = ctypes.c_int(0)
        major, minor = ctypes.c_int(0), ctypes.c_int(0)
        if cuda.cuDeviceGet(ctypes.byref(dev), i) != 0:
            continue
        cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)
        cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)
        caps.append((major.value, minor.value))
    return caps


def require_cuda(op: str) -> None:
    """Raises OpUnavailableError saying what is missing when `op` cannot run on this machine."""
    driver = driver_version()
    devices = [] if isinstance(driver, str) else device_capabilities()
    problem = cuda_problem(op, BUILD_INFO, driver, devices)
    if problem:
        raise OpUnavailableError(problem)


def cuda_available(op: str) -> bool:
    """True when require_cuda(op) would pass (for choosing a CPU fallback quietly)."""
    try:
        require_cuda(op)
        return True
    except OpUnavailableError:
        return False
