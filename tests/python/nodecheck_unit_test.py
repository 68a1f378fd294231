"""opforge_ops.nodecheck's pure parts, without torch: the fatbinary reader (against the real
overflow library of the default wheel and `opforge inspect`), the launcher variables of torchrun,
SLURM and Open MPI, the cluster-consistency rules, nccl-tests' bandwidth arithmetic, the report.
Runs with Debian's python3 against the default wheel on PYTHONPATH (tests/nodecheck.cmake)."""
import glob
import json
import os
import subprocess
import sys

import pytest

import opforge_ops
from opforge_ops import _native
from opforge_ops.nodecheck import bandwidth as bw
from opforge_ops.nodecheck import consistency, fatbin, launch, report


def test_importing_opforge_ops_and_nodecheck_imports_no_torch():
    code = ('import sys, opforge_ops, opforge_ops.nodecheck, opforge_ops.nodecheck.cli; '
            'bad = [m for m in ("torch", "numpy") if m in sys.modules]; print(bad); sys.exit(bool(bad))')
    res = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_help_runs_without_torch():
    res = subprocess.run([sys.executable, '-m', 'opforge_ops.nodecheck', '--help'],
                         capture_output=True, text=True)
    assert res.returncode == 0 and '--quick' in res.stdout and '--json' in res.stdout


# ----------------------------------------------------------------------------- fatbinary

def _overflow_lib():
    path = _native.find('overflow')
    if path is None:
        pytest.fail('the default wheel has no overflow library (tests/e2e/default_wheel.sh builds it)')
    return path


def test_fatbin_of_the_wheel_matches_opforge_inspect():
    images = fatbin.library_images(_overflow_lib())
    names = {i.name for i in images}
    assert names, 'no GPU code found in the overflow library'
    binary = os.environ.get('OPFORGE_BINARY')
    wheels = glob.glob(os.path.join(os.environ.get('OPFORGE_E2E_DIST', ''), '*.whl'))
    if not binary or not wheels:
        pytest.fail('OPFORGE_BINARY and OPFORGE_E2E_DIST must be set (tests/nodecheck.cmake)')
    res = subprocess.run([binary, 'inspect', '--json', wheels[0]], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    lib = next(f for f in json.loads(res.stdout)['files']
               if f['path'].endswith('libopforge_overflow.so'))
    assert names == {img['name'] for img in lib['elf']['fatbin']}
    # The default wheel is built with TORCH_CUDA_ARCH_LIST=9.0 (tests/e2e/default_wheel.sh): SASS
    # for sm_90 and no PTX, so it runs on 9.x and nothing newer.
    assert names == {'sm_90'}
    assert fatbin.arch_list(images) == ['9.0']
    assert _native.arch_supports(fatbin.arch_list(images), (9, 0))
    assert not _native.arch_supports(fatbin.arch_list(images), (10, 0))
    assert not _native.arch_supports(fatbin.arch_list(images), (8, 6))


def test_a_cpu_library_has_no_gpu_code():
    path = _native.find('utils')
    assert path is not None
    assert fatbin.library_images(path) == []


def _entry(kind, arch, payload):
    import struct
    head = struct.pack('<HHIQI', kind, 0x0101, 64, len(payload), 0) + bytes(4)  # 24 bytes so far
    head += struct.pack('<II', 0, arch) + bytes(32)  # tool version, arch at +28, rest up to 64
    return head + payload


def test_fatbin_with_sass_and_ptx_as_nvcc_lays_it_out():
    import struct
    entries = _entry(2, 80, bytes(16)) + _entry(1, 90, bytes(24)) + _entry(2, 90, bytes(8))
    one = struct.pack('<IHHQ', 0xBA55ED50, 1, 16, len(entries)) + entries
    section = one + bytes(8) + one  # two fatbinaries, padding between
    images = fatbin.parse_fatbin(section)
    assert [i.name for i in images] == ['sm_80', 'compute_90', 'sm_90'] * 2
    assert fatbin.arch_list(sorted(set(images), key=lambda i: (i.arch, i.kind))) == \
        ['8.0', '9.0+PTX', '9.0']


def test_bad_fatbinaries_are_errors(tmp_path):
    with pytest.raises(fatbin.FatbinError, match='magic 0x12345678'):
        fatbin.parse_fatbin((0x12345678).to_bytes(4, 'little') + bytes(12))
    header = (0xBA55ED50).to_bytes(4, 'little') + (1).to_bytes(2, 'little') + \
        (16).to_bytes(2, 'little') + (1000).to_bytes(8, 'little')
    with pytest.raises(fatbin.FatbinError, match='overruns'):
        fatbin.parse_fatbin(header + bytes(32))
    notelf = tmp_path / 'x.so'
    notelf.write_bytes(b'not an ELF file at all')
    with pytest.raises(fatbin.FatbinError, match='not an ELF'):
        fatbin.library_images(str(notelf))


def test_overflow_library_facts_without_a_gpu():
    from opforge_ops.nodecheck import facts
    lib = facts.overflow_library(None)
    assert lib['holds_gpu_arch'] is None and 'sm_90' in lib['images']
    assert facts.overflow_library('9.0')['holds_gpu_arch'] is True
    assert facts.overflow_library('8.0')['holds_gpu_arch'] is False


# ----------------------------------------------------------------------------- launchers

def test_torchrun_variables():
    env = {'RANK': '3', 'WORLD_SIZE': '8', 'LOCAL_RANK': '1', 'LOCAL_WORLD_SIZE': '2',
           'MASTER_ADDR': 'node0', 'MASTER_PORT': '29400', 'TORCHELASTIC_USE_AGENT_STORE': 'True'}
    got = launch.detect(env)
    assert (got.launcher, got.rank, got.world_size, got.local_rank, got.local_world_size) == \
        ('torchrun', 3, 8, 1, 2)
    assert got.endpoint == 'node0:29400' and got.agent_store


def test_slurm_variables():
    env = {'SLURM_PROCID': '5', 'SLURM_NTASKS': '8', 'SLURM_LOCALID': '1',
           'SLURM_TASKS_PER_NODE': '4(x2)', 'SLURM_JOB_NODELIST': 'gpu[07-08]'}
    got = launch.detect(env)
    assert (got.launcher, got.rank, got.world_size, got.local_rank, got.local_world_size) == \
        ('slurm', 5, 8, 1, 4)
    assert got.endpoint == 'gpu07:29500'
    assert launch.detect(dict(env, MASTER_ADDR='10.0.0.1', MASTER_PORT='1234')).endpoint == '10.0.0.1:1234'
    assert launch.first_slurm_host('a100-[3,5-9],login') == 'a100-3'
    assert launch.first_slurm_host('single') == 'single'


def test_open_mpi_variables():
    env = {'OMPI_COMM_WORLD_RANK': '2', 'OMPI_COMM_WORLD_SIZE': '4',
           'OMPI_COMM_WORLD_LOCAL_RANK': '0', 'OMPI_COMM_WORLD_LOCAL_SIZE': '2'}
    with pytest.raises(launch.LaunchError, match='MASTER_ADDR'):
        launch.detect(env)  # two nodes and nobody says where rank 0 is
    got = launch.detect(env, master_addr='node0', master_port=4000)
    assert (got.launcher, got.rank, got.world_size, got.local_rank) == ('mpirun', 2, 4, 0)
    assert got.endpoint == 'node0:4000'
    one_node = dict(env, OMPI_COMM_WORLD_LOCAL_SIZE='4')
    assert launch.detect(one_node).master_addr == '127.0.0.1'


def test_no_launcher_and_bad_values():
    assert launch.detect({'PATH': '/usr/bin'}) is None
    with pytest.raises(launch.LaunchError, match="WORLD_SIZE='two' is not an integer"):
        launch.detect({'RANK': '0', 'WORLD_SIZE': 'two', 'LOCAL_RANK': '0', 'MASTER_ADDR': 'x'})
    with pytest.raises(launch.LaunchError, match='MASTER_ADDR is not'):
        launch.detect({'RANK': '0', 'WORLD_SIZE': '2', 'LOCAL_RANK': '0'})


def test_bad_launcher_variables_exit_2():
    env = dict(os.environ, RANK='0', WORLD_SIZE='two', LOCAL_RANK='0', MASTER_ADDR='127.0.0.1')
    res = subprocess.run([sys.executable, '-m', 'opforge_ops.nodecheck'], env=env,
                         capture_output=True, text=True)
    assert res.returncode == 2 and "WORLD_SIZE='two' is not an integer" in res.stderr


def test_local_worker_environment():
    env = launch.local_env({'SLURM_PROCID': '4', 'NCCL_DEBUG': 'INFO', 'PATH': '/bin'}, 1, 4, 5555, None)
    assert 'SLURM_PROCID' not in env and env['NCCL_DEBUG'] == 'INFO'  # NCCL variables pass through
    got = launch.detect(env)
    assert (got.launcher, got.rank, got.world_size, got.endpoint) == ('local', 1, 4, '127.0.0.1:5555')


# ----------------------------------------------------------------------------- consistency

BUILD = {'version': '0.1.0+cu13.gabc', 'source_commit': 'abc', 'arch_list': ['9.0'], 'ops': ['overflow']}


def _rank(r, **kw):
    f = {'rank': r, 'host': f'n{r // 2}', 'kernel': '6.1.0-18-amd64', 'torch': '2.15.0',
         'cuda': '13.0', 'nccl': '2.30.7',
         'gpu': {'index': r % 2, 'name': 'NVIDIA H100 80GB HBM3', 'capability': '9.0'},
         'opforge_ops': dict(BUILD, overflow_library={'path': '/p/libopforge_overflow.so',
                                                      'images': ['compute_90', 'sm_90'],
                                                      'holds_gpu_arch': True})}
    f.update(kw)
    return f


def test_a_uniform_cluster_passes():
    assert consistency.check([_rank(r) for r in range(4)]) == ([], [])


def test_differences_across_ranks():
    a100 = {'index': 1, 'name': 'NVIDIA A100-SXM4-80GB', 'capability': '8.0'}
    ranks = [_rank(0), _rank(1), _rank(2, torch='2.14.0', nccl='2.29.1'),
             _rank(3, gpu=a100, kernel='5.4.0-150-generic',
                   opforge_ops=dict(BUILD, version='0.1.0+cu13.gdef', source_commit='def',
                                    overflow_library={'path': '/q/libopforge_overflow.so',
                                                      'images': ['compute_90', 'sm_90'],
                                                      'holds_gpu_arch': False}))]
    failures, warnings = consistency.check(ranks)
    assert failures == [
        'step consistency: opforge_ops builds differ: ranks 0-2 have 0.1.0+cu13.gabc (commit abc, '
        'arch 9.0); rank 3 has 0.1.0+cu13.gdef (commit def, arch 9.0)',
        'step consistency: torch versions differ: ranks 0-1, 3 have 2.15.0; rank 2 has 2.14.0',
        'step consistency: NCCL versions differ: ranks 0-1, 3 have 2.30.7; rank 2 has 2.29.1',
        'step consistency: rank 3 (n1): the opforge_ops wheel has no code for its NVIDIA '
        'A100-SXM4-80GB (compute capability 8.0): /q/libopforge_overflow.so holds compute_90, '
        'sm_90; rebuild with TORCH_CUDA_ARCH_LIST including 8.0',
    ]
    assert warnings == [
        'GPU kinds differ: ranks 0-2 have NVIDIA H100 80GB HBM3 (9.0); rank 3 has NVIDIA '
        'A100-SXM4-80GB (8.0); synchronous training runs at the pace of the slowest GPU',
        'n1 (Linux 5.4.0-150-generic): kernel older than 5.5 (rank 3); multi-process jobs can '
        'hang there: upgrade the kernel',
    ]


def test_rank_list():
    assert consistency.rank_list([3]) == 'rank 3'
    assert consistency.rank_list([5, 0, 1, 2, 7, 8]) == 'ranks 0-2, 5, 7-8'


# ----------------------------------------------------------------------------- bandwidth

def test_bus_bandwidth_as_nccl_tests_defines_it():
    # 1 GiB all_reduce in 0.1 s on 8 ranks: algbw 10.737 GB/s, busbw x 2*7/8.
    assert bw.algbw_gbps(1 << 30, 0.1) == pytest.approx(10.737418, rel=1e-6)
    assert bw.busbw_gbps('all_reduce', 1 << 30, 0.1, 8) == pytest.approx(10.737418 * 1.75, rel=1e-6)
    assert bw.busbw_gbps('all_gather', 1 << 30, 0.1, 8) == pytest.approx(10.737418 * 0.875, rel=1e-6)
    assert bw.bus_factor('all_reduce', 2) == 1.0 and bw.bus_factor('all_gather', 2) == 0.5
    assert bw.sizes(8, 64) == [8, 16, 32, 64]
    assert bw.sizes(8, 1 << 30)[-1] == 1 << 30 and len(bw.sizes(8, 1 << 30)) == 28
    assert bw.all_gather_layout(8, 4) == 1 and bw.all_gather_layout(1 << 20, 4) == 65536
    assert [bw.parse_size(s) for s in ('8', '64K', '256M', '1G', '2GiB')] == \
        [8, 65536, 256 << 20, 1 << 30, 2 << 30]
    with pytest.raises(ValueError, match='not a size'):
        bw.parse_size('lots')
    assert bw.iterations(8) == 20 and bw.iterations(1 << 30) == 2


# ----------------------------------------------------------------------------- report

def test_report_for_plan_nodes_and_text():
    class L:
        launcher, world_size, endpoint = 'torchrun', 2, 'n0:29500'
    ranks = [dict(_rank(r), local_rank=r, world_size=2, driver='570.86.15',
                  memory_touch={'ok': True, 'bytes': 1 << 26},
                  selftest={'status': 'passed', 'detail': ''},
                  steps=[{'name': 'all_reduce', 'status': 'passed', 'detail': '', 'seconds': 0.1},
                         {'name': 'reduce_scatter', 'status': 'skipped', 'detail': 'gloo has none',
                          'seconds': 0}]) for r in range(2)]
    for f in ranks:
        f['gpu']['memory_bytes'] = 80 << 30
    table = {'max_bytes': 16, 'ranks': 2, 'all_reduce': [
        {'bytes': 16, 'time_us': 10.0, 'algbw_gbps': 0.0016, 'busbw_gbps': 0.0016}],
        'all_gather': [{'bytes': 16, 'time_us': 8.0, 'algbw_gbps': 0.002, 'busbw_gbps': 0.001}]}
    rep = report.build(L, 'nccl', ranks, table, [], ['a warning'])
    # The doctor-shaped list `opforge plan --nodes` reads: one entry per GPU of the cluster.
    assert rep['gpus'] == [{'index': 0, 'name': 'NVIDIA H100 80GB HBM3', 'capability': '9.0',
                            'uuid': '', 'host': 'n0', 'rank': 0},
                           {'index': 1, 'name': 'NVIDIA H100 80GB HBM3', 'capability': '9.0',
                            'uuid': '', 'host': 'n0', 'rank': 1}]
    lines = report.text(rep)
    assert lines[0].startswith('rank 0/2 n0 local 0: NVIDIA H100 80GB HBM3 (cc 9.0, 80 GiB)')
    assert 'overflow: compute_90,sm_90 holds this GPU' in lines[0]
    assert any(l.startswith('collectives (nccl, 2 ranks, results checked): passed: all_reduce')
               for l in lines), lines
    assert any('reduce_scatter (gloo has none)' in l for l in lines)
    assert any(l.split()[:2] == ['16', '10.0'] for l in lines), lines
    assert lines[-2:] == ['WARNING: a warning', 'OK']
    bad = report.build(L, 'nccl', ranks, {'skipped': 'needs >= 2 GPUs'}, ['x', 'y'], [])
    assert report.text(bad)[-2:] == ['bandwidth: skipped (needs >= 2 GPUs)', 'FAIL: x; y']


def test_runtime_facts_are_what_verify_nodes_reads():
    from opforge_ops.nodecheck import facts
    data = os.path.join(os.path.dirname(__file__), '..', 'data', 'cpuinfo', 'vm-x86-64-v4.txt')
    with open(data) as f:
        text = f.read()
    assert facts.cpu_level(text) == 'x86-64-v4'
    assert facts.cpu_level(text.replace(' avx512f ', ' ')) == 'x86-64-v3'
    assert facts.cpu_level('flags\t: fpu sse sse2\n') == 'x86-64'
    assert facts.cpu_level('processor\t: 0\n') is None
    assert facts.newest(b'\x00GLIBCXX_3.4.9\x00GLIBCXX_3.4.30\x00GLIBCXX_3.4\x00CXXABI_1.3.13\x00', b'GLIBCXX') == '3.4.30'
    assert facts.newest(b'nothing', b'CXXABI') is None
    got = facts.runtime()
    assert got['machine'] == 'x86_64' and got['glibc'].startswith('2.')
    assert got['cpu_level'].startswith('x86-64')
