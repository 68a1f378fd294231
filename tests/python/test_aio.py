"""opforge_ops.aio: whole-file round trips through libaio with numpy arrays, bytearrays and torch
CPU tensors; errors that name the file and the errno."""
import errno
import os
import subprocess
import sys

import numpy as np
import pytest

from opforge_ops import aio

SIZES = [0, 1, 4095, 4096, (1 << 20) + 3, 64 << 20]


@pytest.fixture
def disk_dir(tmp_path):
    return tmp_path


def pattern(n, seed=1):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


@pytest.mark.parametrize('size', SIZES)
def test_numpy_round_trip(disk_dir, size):
    data = pattern(size)
    path = disk_dir / 'f.bin'
    assert aio.write(path, data) == size
    assert aio.last_used_direct() is True
    assert os.path.getsize(path) == size
    back = np.empty(size, np.uint8)
    assert aio.read_into(path, back) == size
    np.testing.assert_array_equal(back, data)


@pytest.mark.parametrize('size', [1, 4095, (1 << 20) + 3])
def test_unaligned_numpy_buffers(disk_dir, size):
    data = pattern(size, 2)
    src = np.empty(size + 3, np.uint8)[3:]        # 3 bytes past numpy's aligned allocation
    src[:] = data
    path = disk_dir / 'u.bin'
    aio.write(path, src)
    dst = np.zeros(size + 1, np.uint8)[1:]
    aio.read_into(path, dst)
    np.testing.assert_array_equal(dst, data)


def test_aligned_empty_is_page_aligned(disk_dir):
    buf = aio.aligned_empty((1 << 20) + 5)
    assert buf.ctypes.data % 4096 == 0 and buf.nbytes == (1 << 20) + 5
    buf[:] = pattern(buf.nbytes, 7)
    aio.write(disk_dir / 'a.bin', buf)
    back = aio.aligned_empty(buf.nbytes)
    aio.read_into(disk_dir / 'a.bin', back)
    np.testing.assert_array_equal(back, buf)


def test_bytearray_and_bytes(disk_dir):
    path = disk_dir / 'b.bin'
    aio.write(path, b'hello, aio' * 1000)
    out = aio.read(path)
    assert isinstance(out, bytearray) and out == b'hello, aio' * 1000
    buf = bytearray(len(out) + 10)
    assert aio.read_into(path, buf, block_size=4096, queue_depth=2) == len(out)
    assert buf[:len(out)] == out


def test_torch_tensors(disk_dir):
    torch = pytest.importorskip('torch')
    t = torch.randn(1000, 257)
    path = disk_dir / 't.bin'
    aio.write(path, t)
    back = torch.empty_like(t)
    aio.read(path, back)
    assert torch.equal(back, t)
    with pytest.raises(ValueError, match='contiguous'):
        aio.read_into(path, torch.empty(257, 1000).t())


def test_missing_file_names_path_and_errno(disk_dir):
    path = disk_dir / 'missing.bin'
    with pytest.raises(OSError) as info:
        aio.read(path)
    assert info.value.errno == errno.ENOENT
    assert str(path) in str(info.value)


def test_unwritable_target(disk_dir):
    # CI runs as root, which ignores permission bits: a parent that is a regular file.
    parent = disk_dir / 'plain'
    parent.write_text('x')
    with pytest.raises(OSError) as info:
        aio.write(parent / 'out.bin', b'data')
    assert info.value.errno == errno.ENOTDIR
    assert str(parent / 'out.bin') in str(info.value)
    assert 'errno 20' in str(info.value)


def test_buffer_too_small_is_an_error_not_a_short_read(disk_dir):
    path = disk_dir / 's.bin'
    aio.write(path, pattern(5000))
    with pytest.raises(ValueError, match='the file has 5000 bytes, the buffer only 4096'):
        aio.read_into(path, np.empty(4096, np.uint8))


def test_tmpfs_round_trip():
    path = f'/dev/shm/opforge_aio_py.{os.getpid()}'
    try:
        data = pattern((1 << 20) + 3, 4)
        aio.write(path, data)
        if not aio.last_used_direct():       # tmpfs refused O_DIRECT before Linux 6.6
            assert 'refuses O_DIRECT' in aio.last_note() and path in aio.last_note()
        back = np.empty_like(data)
        aio.read_into(path, back)
        np.testing.assert_array_equal(back, data)
    finally:
        if os.path.exists(path):
            os.remove(path)


def test_importing_imports_neither_torch_nor_numpy():
    code = 'import sys, opforge_ops.aio, opforge_ops.cpu_adam, opforge_ops.utils; ' \
           'print("torch" in sys.modules, "numpy" in sys.modules)'
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ['False', 'False']


def test_library_does_not_link_libaio():
    # dlopen at first use keeps libaio out of DT_NEEDED: the wheel stays manylinux and loads
    # where the library is called libaio.so.1t64.
    from opforge_ops import _native
    lib = _native.find('aio')
    out = subprocess.run(['readelf', '-d', lib], capture_output=True, text=True, check=True).stdout
    needed = [line for line in out.splitlines() if '(NEEDED)' in line]
    assert needed and not any('libaio' in line for line in needed), needed
