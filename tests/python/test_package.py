"""The opforge_ops package core: import without torch/numpy, finding and loading op libraries,
and the CUDA run-time checks with exact messages.

Runs against the default wheel unpacked on PYTHONPATH (tests/python.cmake), never the source tree:
a package without its built ops would pass most of these checks.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

import opforge_ops
from opforge_ops import _native

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_PACKAGE_DIR = os.path.normpath(os.path.join(HERE, '..', '..', 'src', 'python'))


def test_runs_against_the_built_wheel():
    where = os.path.dirname(os.path.abspath(opforge_ops.__file__))
    assert not where.startswith(SOURCE_PACKAGE_DIR + os.sep), (
        f'opforge_ops was imported from the source tree ({where}); PYTHONPATH must hold the '
        'unpacked default wheel (tests/python.cmake)')
    assert opforge_ops.build_info['source_checkout'] is False
    assert opforge_ops.build_info['ops'], 'the default wheel builds ops'


def _python_path():
    return os.pathsep.join(p for p in [os.path.dirname(os.path.dirname(opforge_ops.__file__)),
                                       os.environ.get('PYTHONPATH', '')] if p)


def test_import_loads_neither_torch_nor_numpy():
    code = ("import sys, opforge_ops; "
            "bad = [m for m in ('torch', 'numpy') if m in sys.modules]; "
            "print(opforge_ops.__version__); sys.exit(1 if bad else 0)")
    env = dict(os.environ, PYTHONPATH=_python_path())
    res = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_version_and_build_info_agree():
    info = opforge_ops.build_info
    assert opforge_ops.__version__ == info['version']
    for key in ('opforge_version', 'toolkit_version', 'host_compiler', 'arch_list', 'ops',
                'source_commit', 'notes'):
        assert key in info
    # Versions only, never absolute paths of the build machine.
    for key in ('toolkit_version', 'host_compiler', 'source_commit', 'opforge_version'):
        assert not str(info[key]).startswith('/'), key
    # Every op the wheel says it built is there, with why; every op has its build variable.
    assert set(info['ops']) <= set(opforge_ops.available_ops())
    for op in info['ops']:
        assert info['notes'][op][0].startswith('requested by: '), info['notes']
        assert info['build_vars'][op] == 'DS_BUILD_' + op.upper()


def test_every_built_op_loads_and_reports_its_abi():
    assert opforge_ops.available_ops()
    for op in opforge_ops.available_ops():
        lib = _native.load(op)
        fn = getattr(lib, f'opforge_{op}_abi_version')
        assert fn() >= 1, op


@pytest.fixture
def lib_dir(monkeypatch):
    d = tempfile.mkdtemp(prefix='opforge-libdir-')
    src = os.path.join(d, 'demo.c')
    with open(src, 'w') as f:
        f.write('__attribute__((visibility("default"))) int opforge_demo_abi_version(void) '
                '{ return 7; }\n')
    subprocess.run(['gcc', '-shared', '-fPIC', '-o', os.path.join(d, 'libopforge_demo.so'), src],
                   check=True)
    monkeypatch.setenv('OPFORGE_OPS_LIB_DIR', d)
    _native._loaded.pop('demo', None)
    yield d
    _native._loaded.pop('demo', None)
    shutil.rmtree(d)


def test_lib_dir_comes_first(lib_dir):
    assert 'demo' in opforge_ops.available_ops()
    assert _native.find('demo') == os.path.join(lib_dir, 'libopforge_demo.so')
    assert _native.load('demo').opforge_demo_abi_version() == 7
    assert _native.load('demo') is _native.load('demo')


def test_missing_op_names_the_build_variable(lib_dir):
    with pytest.raises(opforge_ops.OpNotBuiltError) as e:
        _native.load('fused_lamb')
    msg = str(e.value)
    assert msg.startswith("opforge_ops: op 'fused_lamb' is not built into this installation "
                          f"(no libopforge_fused_lamb.so in {lib_dir}, ")
    assert msg.endswith("rebuild the wheel with DS_BUILD_FUSED_LAMB=1 "
                        "(e.g. `DS_BUILD_FUSED_LAMB=1 opforge build RECIPE`)")
    assert isinstance(e.value, ImportError)


INFO = {'toolkit_version': '13.0', 'arch_list': ['8.0', '9.0+PTX']}


def test_cuda_problem_no_driver():
    assert _native.cuda_problem('overflow', INFO, 'libcuda.so.1: cannot open shared object file',
                                [(8, 0)]) == (
        "opforge_ops: op 'overflow' needs the NVIDIA driver (libcuda.so.1), which cannot be "
        "loaded: libcuda.so.1: cannot open shared object file. Install the NVIDIA driver on "
        "this machine.")


def test_cuda_problem_old_driver():
    assert _native.cuda_problem('overflow', INFO, (12, 4), [(8, 0)]) == (
        "opforge_ops: op 'overflow' was built with CUDA 13.0 and needs a driver for CUDA 13.x or "
        "newer; this driver supports CUDA 12.4. Update the NVIDIA driver, or install a wheel "
        "built for CUDA 12 (local version +cu12).")


def test_cuda_problem_no_gpu(monkeypatch):
    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '')
    assert _native.cuda_problem('overflow', INFO, (13, 0), []) == (
        "opforge_ops: op 'overflow' needs a CUDA GPU, but the driver reports none "
        "(CUDA_VISIBLE_DEVICES='').")


def test_cuda_problem_arch():
    assert _native.cuda_problem('overflow', INFO, (13, 0), [(8, 6), (9, 0)]) is None
    assert _native.cuda_problem('overflow', INFO, (13, 1), [(10, 0)]) is None  # PTX 9.0 JITs
    assert _native.cuda_problem('overflow', INFO, (13, 0), [(8, 0), (7, 5)]) == (
        "opforge_ops: op 'overflow' has no code for GPU 1 (compute capability 7.5): this wheel "
        "holds 8.0;9.0+PTX. Rebuild with TORCH_CUDA_ARCH_LIST=\"7.5\" (or add 7.5 to the "
        "recipe's [arch] list).")


def test_arch_supports_rules():
    assert _native.arch_supports(['8.0'], (8, 9))
    assert not _native.arch_supports(['8.6'], (8, 0))
    assert not _native.arch_supports(['8.0'], (9, 0))
    assert _native.arch_supports(['9.0a'], (9, 0))
    assert not _native.arch_supports(['9.0a'], (9, 1))
    # arch-specific PTX (compute_90a) uses features of that GPU alone: no JIT onto a newer one
    assert _native.arch_supports(['9.0a+PTX'], (9, 0))
    assert not _native.arch_supports(['9.0a+PTX'], (10, 0))


def _nvidia_smi(*args):
    return subprocess.run(['nvidia-smi', *args], capture_output=True, text=True, check=True).stdout


def test_require_cuda_on_this_machine():
    driver = _native.driver_version()
    if isinstance(driver, str):
        with pytest.raises(opforge_ops.OpUnavailableError) as e:
            _native.require_cuda('overflow')
        assert str(e.value) == (
            "opforge_ops: op 'overflow' needs the NVIDIA driver (libcuda.so.1), which cannot be "
            f"loaded: {driver}. Install the NVIDIA driver on this machine.")
        assert not _native.cuda_available('overflow')
        assert _native.device_capabilities() == []
        return
    # A machine with a driver: what the driver API reads must match nvidia-smi's own report.
    assert shutil.which('nvidia-smi'), 'libcuda.so.1 loads but nvidia-smi is missing'
    smi_cuda = re.search(r'CUDA Version: (\d+)\.(\d+)', _nvidia_smi())
    assert smi_cuda, 'nvidia-smi prints no CUDA Version'
    assert driver == (int(smi_cuda.group(1)), int(smi_cuda.group(2)))
    if os.environ.get('CUDA_VISIBLE_DEVICES') is None:
        caps = [tuple(int(x) for x in line.strip().split('.'))
                for line in _nvidia_smi('--query-gpu=compute_cap', '--format=csv,noheader').splitlines()
                if line.strip()]
        # CUDA numbers GPUs fastest first, nvidia-smi by PCI bus: compare as sets of capabilities.
        assert sorted(_native.device_capabilities()) == sorted(caps)
