"""The package's one loader and its errors (opforge_ops._native), and the one buffer module
(opforge_ops._buffers): what every op module builds on. Runs against the default wheel unpacked on
PYTHONPATH (tests/python.cmake); the libraries with a wrong ABI or none are made here with gcc."""
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

import opforge_ops
from opforge_ops import _buffers, _native, overflow

PACKAGE = os.path.dirname(os.path.abspath(opforge_ops.__file__))


def _gcc_lib(d, op, body):
    src = os.path.join(d, op + '.c')
    with open(src, 'w') as f:
        f.write(body)
    subprocess.run(['gcc', '-shared', '-fPIC', '-o', os.path.join(d, f'libopforge_{op}.so'), src],
                   check=True)


@pytest.fixture
def lib_dir(monkeypatch):
    """OPFORGE_OPS_LIB_DIR with: abi3 (ABI 3), noabi (no ABI function), garbage (not an ELF)."""
    d = tempfile.mkdtemp(prefix='opforge-loader-')
    _gcc_lib(d, 'abi3', '__attribute__((visibility("default"))) int opforge_abi3_abi_version(void) '
                        '{ return 3; }\n'
                        '__attribute__((visibility("default"))) const char* opforge_abi3_last_error(void) '
                        '{ return "it broke"; }\n')
    _gcc_lib(d, 'noabi', 'int opforge_noabi_something(void) { return 0; }\n')
    with open(os.path.join(d, 'libopforge_garbage.so'), 'w') as f:
        f.write('not a shared library\n')
    monkeypatch.setenv('OPFORGE_OPS_LIB_DIR', d)
    names = ('abi3', 'noabi', 'garbage')
    for op in names:
        _native._loaded.pop(op, None)
    yield d
    for op in names:
        _native._loaded.pop(op, None)
    shutil.rmtree(d)


def test_one_error_family():
    assert issubclass(opforge_ops.OpNotBuiltError, opforge_ops.OpError)
    assert issubclass(opforge_ops.OpNotBuiltError, ImportError)  # what it always was
    assert issubclass(opforge_ops.OpLoadError, opforge_ops.OpError)
    assert issubclass(opforge_ops.OpUnavailableError, opforge_ops.OpError)
    assert issubclass(opforge_ops.OpError, RuntimeError)
    # overflow's older name: code that catches it catches every op error.
    assert overflow.OverflowLibError is opforge_ops.OpError


def test_not_built_is_every_type_callers_catch(lib_dir):
    with pytest.raises(opforge_ops.OpNotBuiltError) as e:
        _native.load('fused_lamb', abi=1)
    for t in (ImportError, RuntimeError, opforge_ops.OpError, overflow.OverflowLibError):
        assert isinstance(e.value, t), t
    assert e.value.op == 'fused_lamb' and e.value.msg == str(e.value)
    assert e.value.searched == [lib_dir, os.path.join(PACKAGE, '_lib')]


def test_abi_checked(lib_dir):
    assert _native.load('abi3', abi=3).opforge_abi3_abi_version() == 3
    with pytest.raises(opforge_ops.OpLoadError) as e:
        _native.load('abi3', abi=1)
    path = os.path.join(lib_dir, 'libopforge_abi3.so')
    assert str(e.value) == (
        f"opforge_ops: {path} has ABI version 3, but this opforge_ops expects 1: the library and "
        "the Python package come from different builds; reinstall the wheel (or point "
        "OPFORGE_OPS_LIB_DIR at libraries built from the same source)")


def test_library_without_abi_function(lib_dir):
    with pytest.raises(opforge_ops.OpLoadError) as e:
        _native.load('noabi', abi=1)
    assert str(e.value) == (f"opforge_ops: {os.path.join(lib_dir, 'libopforge_noabi.so')} has no "
                            "opforge_noabi_abi_version(): it is not an opforge op library for 'noabi'")


def test_library_the_loader_refuses(lib_dir):
    with pytest.raises(opforge_ops.OpLoadError) as e:
        _native.load('garbage')
    path = os.path.join(lib_dir, 'libopforge_garbage.so')
    assert str(e.value).startswith(f"opforge_ops: op 'garbage': {path} cannot be loaded: ")
    assert 'garbage' not in _native._loaded


def test_op_library_declares_once_and_retries_failures(lib_dir):
    calls = []

    def declare(lib):
        calls.append(lib)
        if len(calls) == 1:
            raise opforge_ops.OpUnavailableError('not on this machine')
        lib.opforge_abi3_last_error.restype = ctypes.c_char_p

    library = _native.OpLibrary('abi3', 3, declare)
    with pytest.raises(opforge_ops.OpUnavailableError):
        library()
    lib = library()
    assert library() is lib and len(calls) == 2
    assert library.error(lib) == 'it broke'
    with pytest.raises(opforge_ops.OpLoadError):
        _native.OpLibrary('abi3', 2, declare)()


def test_build_var_from_the_build_record(monkeypatch):
    assert _native.build_var('fused_lamb') == 'DS_BUILD_FUSED_LAMB'
    monkeypatch.setitem(_native.BUILD_INFO, 'build_vars', {'evoformer_attn': 'DS_BUILD_EVOFORMER'})
    assert _native.build_var('evoformer_attn') == 'DS_BUILD_EVOFORMER'
    assert 'DS_BUILD_EVOFORMER=1' in str(opforge_ops.OpNotBuiltError('evoformer_attn', []))
    assert _native.build_var('fused_lamb') == 'DS_BUILD_FUSED_LAMB'


def test_every_op_module_checks_its_abi():
    from opforge_ops import aio, cpu_adam, utils
    from opforge_ops.overflow import _lib
    for module, op in ((aio, 'aio'), (cpu_adam, 'cpu_adam'), (utils, 'utils'), (_lib, 'overflow')):
        library = module.lib if module is _lib else module._library
        assert isinstance(library, _native.OpLibrary) and library.op == op
        assert library.abi == module.ABI_VERSION
        if op in opforge_ops.build_info['ops']:
            assert _native.abi_version(op, _native.load(op)) == module.ABI_VERSION


def test_overflow_without_its_library_raises_the_old_and_new_types(tmp_path):
    # A copy of the package without _lib/ (and no OPFORGE_OPS_LIB_DIR): the op is not built.
    shutil.copytree(PACKAGE, tmp_path / 'opforge_ops', ignore=shutil.ignore_patterns('_lib', '__pycache__'))
    code = (
        "import numpy, opforge_ops\n"
        "from opforge_ops import overflow\n"
        "try:\n"
        "    overflow.tensor_stats(numpy.zeros(3, numpy.float32))\n"
        "except overflow.OverflowLibError as e:\n"
        "    assert isinstance(e, opforge_ops.OpNotBuiltError) and isinstance(e, ImportError)\n"
        "    print(e)\n")
    env = {k: v for k, v in os.environ.items() if k != 'OPFORGE_OPS_LIB_DIR'}
    env['PYTHONPATH'] = str(tmp_path)
    res = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.startswith("opforge_ops: op 'overflow' is not built into this installation")
    assert 'DS_BUILD_OVERFLOW=1' in res.stdout


def test_the_wheel_is_typed():
    assert os.path.isfile(os.path.join(PACKAGE, 'py.typed'))


# ----------------------------------------------------------------------------- _buffers

def test_torch_and_numpy_detection_imports_neither():
    code = ("import sys\n"
            "from opforge_ops import _buffers\n"
            "class Fake:\n"
            "    def data_ptr(self): return 0\n"
            "    __module__ = 'torch'\n"
            "assert not _buffers.is_torch_tensor(Fake()) and not _buffers.is_numpy_array(Fake())\n"
            "assert _buffers.torch_tensor_type() is None\n"
            "assert _buffers.kind(bytearray(1)) == 'bytearray'\n"
            "assert 'torch' not in sys.modules and 'numpy' not in sys.modules\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(PACKAGE))
    res = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_host_buffers_of_each_kind():
    import numpy as np
    a = np.arange(6, dtype=np.float32)
    b = _buffers.host_buffer(a, writable=True)
    assert (b.address, b.nbytes, b.keep) == (a.ctypes.data, 24, a)
    assert _buffers.kind(a) == 'numpy'
    with pytest.raises(ValueError, match='C-contiguous'):
        _buffers.host_buffer(a[::2], writable=False)
    a.flags.writeable = False
    assert _buffers.host_buffer(a, writable=False).nbytes == 24
    with pytest.raises(ValueError, match='writable array'):
        _buffers.host_buffer(a, writable=True)

    ba = bytearray(b'abcd')
    b = _buffers.host_buffer(ba, writable=True)
    assert b.nbytes == 4 and ctypes.string_at(b.address, 4) == b'abcd'
    data = b'xyz'
    b = _buffers.host_buffer(data, writable=False)
    assert ctypes.string_at(b.address, 3) == b'xyz' and b.keep is data  # read in place
    with pytest.raises(ValueError, match='read-only bytes'):
        _buffers.host_buffer(data, writable=True)
    with pytest.raises(ValueError, match='contiguous buffer'):
        _buffers.host_buffer(memoryview(ba)[::2], writable=False)


def test_host_buffer_of_a_torch_tensor():
    torch = pytest.importorskip('torch')
    t = torch.arange(4, dtype=torch.float64)
    assert _buffers.is_torch_tensor(t) and _buffers.is_torch_tensor(torch.nn.Parameter(t))
    assert _buffers.kind(t) == 'torch'
    b = _buffers.host_buffer(t, writable=True)
    assert (b.address, b.nbytes) == (t.data_ptr(), 32)
    with pytest.raises(ValueError, match=r'\.contiguous\(\)'):
        _buffers.host_buffer(t[::2], writable=False)
