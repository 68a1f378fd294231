"""What one rank knows about itself: host, launcher ranks, GPU, versions, the opforge_ops build it
loaded and whether that build carries code for its GPU, a memory touch and the overflow self-test.
"""
from __future__ import annotations

import json
import os
import platform
import socket
import sys
from typing import Any

from .. import _native
from ..build_info import BUILD_INFO
from . import fatbin

# Test-only: 'RANK=JSON' overrides keys of that rank's build_info, so that tests can show how a
# rank with another wheel is reported. Never set it in a real run.
FAKE_BUILD_INFO_ENV = 'OPFORGE_NODECHECK_TEST_BUILD_INFO'


def build_info(rank: int) -> dict[str, Any]:
    info = dict(BUILD_INFO)
    fake = os.environ.get(FAKE_BUILD_INFO_ENV, '')
    who, _, override = fake.partition('=')
    if fake and int(who) == rank:
        info.update(json.loads(override))
    return info


def driver_release() -> str | None:
    """The kernel module's version ('570.86.15'), from /proc/driver/nvidia/version."""
    try:
        with open('/proc/driver/nvidia/version') as f:
            text = f.read()
    except OSError:
        return None
    import re
    m = re.search(r'Kernel Module\s+(?:for \S+\s+)?(\d+(?:\.\d+)+)', text)
    return m.group(1) if m else None


# x86-64 psABI levels in the kernel's /proc/cpuinfo flag names (pni is SSE3, abm is LZCNT), the
# same table `opforge doctor` reads (src/doctor/node.cpp).
_LEVELS = (
    ('x86-64-v2', {'cx16', 'lahf_lm', 'popcnt', 'pni', 'sse4_1', 'sse4_2', 'ssse3'}),
    ('x86-64-v3', {'avx', 'avx2', 'bmi1', 'bmi2', 'f16c', 'fma', 'abm', 'movbe', 'xsave'}),
    ('x86-64-v4', {'avx512f', 'avx512bw', 'avx512cd', 'avx512dq', 'avx512vl'}),
)


def cpu_level(cpuinfo: str) -> str | None:
    """The highest x86-64 level whose every flag the first 'flags' line lists; None without one."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(':')
        if key.strip() != 'flags':
            continue
        flags, level = set(value.split()), 'x86-64'
        for name, needs in _LEVELS:
            if not needs <= flags:
                break
            level = name
        return level
    return None


def newest(text: bytes, prefix: bytes) -> str | None:
    """The newest '<prefix>_<dotted number>' version name in a library's bytes ('3.4.30')."""
    import re
    found = {m.group(1).decode() for m in re.finditer(re.escape(prefix) + rb'_(\d+(?:\.\d+)+)\x00', text)}
    return max(found, key=lambda v: tuple(int(x) for x in v.split('.')), default=None)


def runtime() -> dict[str, Any]:
    """What a wheel's libraries meet in this process: the machine, glibc, the libstdc++ it loaded
    (conda's or the system's: the one torch brought in, found in /proc/self/maps) and the CPU level;
    the part of `opforge doctor --json`'s node report that `opforge verify WHEEL --nodes` reads."""
    out: dict[str, Any] = {'machine': platform.machine(), 'glibc': None, 'glibcxx': None, 'cxxabi': None,
                           'cpu_level': None}
    name, version = platform.libc_ver()
    if name == 'glibc' and version:
        out['glibc'] = version
    try:
        with open('/proc/self/maps') as f:
            paths = {line.split()[-1] for line in f if 'libstdc++.so' in line}
        for path in sorted(paths):
            with open(path, 'rb') as lib:
                text = lib.read()
            out['glibcxx'], out['cxxabi'] = newest(text, b'GLIBCXX'), newest(text, b'CXXABI')
            break
    except OSError:
        pass
    try:
        with open('/proc/cpuinfo') as f:
            out['cpu_level'] = cpu_level(f.read())
    except OSError:
        pass
    return out


def overflow_library(capability: str | None) -> dict[str, Any]:
    """Where the overflow op's library is, the GPU code its fatbinary holds, and whether that code
    runs on a GPU of `capability` ('9.0'; None without a GPU)."""
    path = _native.find('overflow')
    out: dict[str, Any] = {'path': path, 'images': [], 'holds_gpu_arch': None}
    if path is None:
        out['error'] = 'not built into this installation'
        return out
    try:
        images = fatbin.library_images(path)
    except (OSError, fatbin.FatbinError) as e:
        out['error'] = f'cannot read its fatbinary: {e}'
        if capability:
            out['holds_gpu_arch'] = False
        return out
    out['images'] = [i.name for i in images]
    if capability:
        major, minor = (int(x) for x in capability.split('.'))
        out['holds_gpu_arch'] = _native.arch_supports(fatbin.arch_list(images), (major, minor))
    return out


def collect(rank: int, local_rank: int, world_size: int, launcher: str, device: Any) -> dict[str, Any]:
    """The facts of this rank; `device` is the torch.device it uses (cuda:N or cpu)."""
    import torch
    facts: dict[str, Any] = {
        'rank': rank, 'local_rank': local_rank, 'world_size': world_size, 'launcher': launcher,
        'host': socket.gethostname(), 'pid': os.getpid(), 'kernel': platform.release(),
        'python': platform.python_version(), 'torch': torch.__version__,
        'cuda': torch.version.cuda, 'nccl': None, 'driver': driver_release(),
        'driver_cuda': None, 'gpu': None, **runtime(),
    }
    if torch.cuda.is_available():
        try:
            facts['nccl'] = '.'.join(str(x) for x in torch.cuda.nccl.version())
        except Exception:  # a build without NCCL
            facts['nccl'] = None
        drv = _native.driver_version()
        facts['driver_cuda'] = None if isinstance(drv, str) else f'{drv[0]}.{drv[1]}'
    capability = None
    if device.type == 'cuda':
        p = torch.cuda.get_device_properties(device)
        capability = f'{p.major}.{p.minor}'
        facts['gpu'] = {'index': device.index, 'name': p.name, 'capability': capability,
                        'memory_bytes': p.total_memory, 'uuid': str(getattr(p, 'uuid', '') or ''),
                        'visible_devices': os.environ.get('CUDA_VISIBLE_DEVICES')}
    build = build_info(rank)
    facts['opforge_ops'] = {k: build.get(k) for k in ('version', 'source_commit', 'arch_list',
                                                      'ops', 'toolkit_version', 'opforge_version')}
    facts['opforge_ops']['overflow_library'] = overflow_library(capability)
    facts['opforge_ops']['package'] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    facts['executable'] = sys.executable
    return facts


def touch_memory(device: Any, nbytes: int) -> dict[str, Any]:
    """Allocates `nbytes` on `device`, writes every byte and reads it back."""
    import torch
    n = nbytes // 4
    t = torch.empty(n, dtype=torch.int32, device=device)
    t.copy_(torch.arange(n, dtype=torch.int32, device=device))
    ok = int(t.sum(dtype=torch.int64).item()) == n * (n - 1) // 2
    del t
    if device.type == 'cuda':
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
    return {'bytes': nbytes, 'ok': ok}


def selftest(device: Any) -> dict[str, Any]:
    """The overflow op's GPU self-test (its test kernels against the CPU oracle) on `device`."""
    if device.type != 'cuda':
        return {'status': 'skipped', 'detail': 'no GPU'}
    import torch

    from .. import OpNotBuiltError
    try:
        from ..overflow import selftest as run
    except ImportError as e:
        return {'status': 'failed', 'detail': f'cannot import opforge_ops.overflow: {e}'}
    try:
        with torch.cuda.device(device):
            failures = run()
    except OpNotBuiltError as e:
        return {'status': 'skipped', 'detail': str(e)}
    except (_native.OpError, OSError) as e:
        return {'status': 'failed', 'detail': str(e)}
    if failures:
        return {'status': 'failed', 'detail': f'{len(failures)} case(s) differ: ' + '; '.join(failures[:3])}
    return {'status': 'passed', 'detail': ''}
