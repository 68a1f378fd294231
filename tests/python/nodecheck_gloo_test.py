"""`python -m opforge_ops.nodecheck` for real on this machine: gloo on loopback with 2 and 4
processes, started by torchrun (PyPI torch) and by the check's own local launcher; and the
failures it must report instead of hanging: a rank killed mid-run, a rank that never arrives, a
rank with another opforge_ops build, an unreachable rendezvous. Each failure must name the rank
and the step, come within the step's deadline, and leave no process behind.

Needs the PyPI torch environment ($OPFORGE_TORCH_VENV, default ~/.cache/opforge/torch-venv, made
by scripts/torch-venv): skipped without it, failed without it in CI (CI=true).
"""
import json
import os
import re
import socket
import subprocess
import time
import uuid

import pytest

VENV = os.environ.get('OPFORGE_TORCH_VENV') or os.path.expanduser('~/.cache/opforge/torch-venv')
PYTHON = os.path.join(VENV, 'bin', 'python')
TORCHRUN = os.path.join(VENV, 'bin', 'torchrun')
STEP_TIMEOUT = 8  # seconds per step: short, but above one gloo step on 2 busy cores

if not os.path.exists(PYTHON):
    if os.environ.get('CI') == 'true':
        raise RuntimeError(f'the PyPI torch environment {VENV} is missing; CI must make it first '
                           f'(scripts/torch-venv)')
    pytest.skip(f'no PyPI torch environment at {VENV} (run scripts/torch-venv)', allow_module_level=True)

COLLECTIVES = ('barrier', 'all_reduce', 'all_gather', 'broadcast', 'reduce_scatter')


def _env(tag, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('OPFORGE_NODECHECK_', 'MASTER_', 'SLURM_', 'OMPI_')) and
           k not in ('RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'LOCAL_WORLD_SIZE')}
    env.update(NODECHECK_TEST_TAG=tag, GLOO_SOCKET_IFNAME='lo', OMP_NUM_THREADS='1', **extra)
    return env


def _leftovers(tag):
    """Pids of processes that still carry this run's tag in their environment."""
    found = []
    needle = f'NODECHECK_TEST_TAG={tag}'.encode()
    for pid in os.listdir('/proc'):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f'/proc/{pid}/environ', 'rb') as f:
                if needle in f.read().split(b'\0'):
                    found.append(int(pid))
        except OSError:
            continue
    return found


def run_check(cmd, env_extra=None, timeout=300):
    tag = uuid.uuid4().hex
    start = time.monotonic()
    res = subprocess.run(cmd, env=_env(tag, **(env_extra or {})), capture_output=True, text=True,
                         timeout=timeout)
    res.seconds = time.monotonic() - start
    res.output = res.stdout + res.stderr
    deadline = time.monotonic() + 5
    while _leftovers(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _leftovers(tag) == [], 'processes left behind:\n' + res.output
    return res


def local(nproc, *args):
    return [PYTHON, '-m', 'opforge_ops.nodecheck', '--nproc', str(nproc), '--timeout',
            str(STEP_TIMEOUT), *args]


def torchrun(nproc, *args):
    # c10d rendezvous on port 0: torchrun picks a free loopback port, no clash with other runs.
    return [TORCHRUN, '--nproc-per-node', str(nproc), '--rdzv-backend', 'c10d', '--rdzv-endpoint',
            '127.0.0.1:0', '-m', 'opforge_ops.nodecheck', '--timeout', str(STEP_TIMEOUT), *args]


def check_report(path, nproc, launcher, sweep):
    rep = json.load(open(path))
    assert rep['schema'] == 'opforge-nodecheck/1'
    assert rep['ok'] is True and rep['verdict'] == 'OK' and rep['failures'] == []
    assert rep['launcher'] == launcher and rep['backend'] == 'gloo' and rep['world_size'] == nproc
    assert [f['rank'] for f in rep['ranks']] == list(range(nproc))
    for f in rep['ranks']:
        assert f['world_size'] == nproc and f['gpu'] is None and f['torch'].startswith('2.')
        assert f['memory_touch']['ok'] is True
        assert f['selftest']['status'] == 'skipped'
        lib = f['opforge_ops']['overflow_library']
        assert lib['holds_gpu_arch'] is None  # no GPU here; the images are still read
        if lib['path']:
            assert lib['images'], lib
        statuses = {s['name']: s['status'] for s in f['steps']}
        for name in COLLECTIVES:
            assert statuses[name] in ('passed', 'skipped'), (name, f['steps'])
        assert statuses['barrier'] == statuses['all_reduce'] == statuses['all_gather'] == \
            statuses['broadcast'] == 'passed'
    assert rep['gpus'] == []  # the doctor-shaped GPU list `opforge plan --nodes` reads
    if sweep:
        table = rep['bandwidth']
        sizes = [row['bytes'] for row in table['all_reduce']]
        assert sizes[0] == 8 and sizes[-1] == table['max_bytes'] == 64 << 10
        for coll, factor in (('all_reduce', 2 * (nproc - 1) / nproc), ('all_gather', (nproc - 1) / nproc)):
            for row in table[coll]:
                assert row['time_us'] > 0
                # Both are rounded to 4 decimals on their own: they differ by up to half a unit each
                # (algbw's half scaled by the factor), which is most of a small bandwidth's value.
                slack = 0.5e-4 * (1 + factor) + 1e-9
                assert row['busbw_gbps'] == pytest.approx(row['algbw_gbps'] * factor, rel=1e-3, abs=slack)
    else:
        assert rep['bandwidth'] == {'skipped': '--quick'}
    return rep


def check_text(out, nproc, sweep):
    for r in range(nproc):
        assert re.search(rf'^rank {r}/{nproc} ', out, re.M), out
    line = next(l for l in out.splitlines() if l.startswith('collectives ('))
    for name in COLLECTIVES:
        assert name in line, line
    if sweep:
        assert re.search(r'^\s+size\s+all_reduce time\s+algbw\s+busbw\s+all_gather time', out, re.M), out
        assert re.search(r'^\s+64K\s+[\d.]+', out, re.M), out
    assert out.rstrip().splitlines()[-1] == 'OK' or '\nOK\n' in out, out


@pytest.mark.parametrize('nproc', [2, 4])
def test_local_launcher(nproc, tmp_path):
    report = tmp_path / 'report.json'
    res = run_check(local(nproc, '--max-bytes', '64K', '--json', str(report)))
    assert res.returncode == 0, res.output
    check_text(res.stdout, nproc, sweep=True)
    check_report(report, nproc, 'local', sweep=True)


@pytest.mark.parametrize('nproc', [2, 4])
def test_torchrun(nproc, tmp_path):
    report = tmp_path / 'report.json'
    args = ('--quick',) if nproc == 4 else ('--max-bytes', '64K')
    res = run_check(torchrun(nproc, *args, '--json', str(report)))
    assert res.returncode == 0, res.output
    check_text(res.stdout, nproc, sweep=nproc == 2)
    check_report(report, nproc, 'torchrun', sweep=nproc == 2)


def _fail_line(out):
    lines = [l for l in out.splitlines() if l.startswith('FAIL: ')]
    assert len(lines) == 1, out
    return lines[0]


def _within_deadline(out):
    """Every rank that reports a failure does so within its step's deadline (plus the monitor's
    polling)."""
    times = [float(t) for t in re.findall(r'^rank \d+: FAIL at step .*? after ([\d.]+) s', out, re.M)]
    assert times, out
    assert max(times) <= STEP_TIMEOUT + 1.0, out


def test_rank_killed_mid_run(tmp_path):
    report = tmp_path / 'report.json'
    res = run_check(local(3, '--quick', '--json', str(report)),
                    {'OPFORGE_NODECHECK_TEST_FAULT': 'kill:1:all_gather'})
    assert res.returncode != 0, res.output
    line = _fail_line(res.stdout)
    assert 'rank 1 is gone' in line and 'all_gather' in line, res.output
    assert 'rank 1 was killed by SIGKILL' in res.stdout, res.output
    _within_deadline(res.stdout)
    rep = json.load(open(report))
    assert rep['ok'] is False and 'rank 1 is gone' in rep['verdict']


def test_rank_that_never_arrives(tmp_path):
    res = run_check(local(3, '--quick'), {'OPFORGE_NODECHECK_TEST_FAULT': 'sleep:2:broadcast'})
    assert res.returncode != 0, res.output
    line = _fail_line(res.stdout)
    assert f'rank 2 did not arrive at step broadcast within {STEP_TIMEOUT} s' in line, res.output
    _within_deadline(res.stdout)


def test_rank_with_another_build(tmp_path):
    report = tmp_path / 'report.json'
    res = run_check(local(2, '--quick', '--json', str(report)),
                    {'OPFORGE_NODECHECK_TEST_BUILD_INFO': '1={"version": "0.0.9+cu12.gdeadbee"}'})
    assert res.returncode == 1, res.output
    line = _fail_line(res.stdout)
    assert 'step consistency: opforge_ops builds differ' in line, line
    assert 'rank 1 has 0.0.9+cu12.gdeadbee' in line, line
    rep = json.load(open(report))
    assert rep['ok'] is False and rep['ranks'][1]['opforge_ops']['version'] == '0.0.9+cu12.gdeadbee'


def test_rank_killed_under_torchrun():
    res = run_check(torchrun(2, '--quick'), {'OPFORGE_NODECHECK_TEST_FAULT': 'kill:1:broadcast'})
    assert res.returncode != 0, res.output
    # torchrun stops the surviving rank when rank 1 dies; rank 0 still names rank 1 and the step.
    line = _fail_line(res.stdout)
    assert 'rank 1 is gone' in line and 'broadcast' in line, res.output


def test_unreachable_rendezvous_names_the_endpoint():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    env = {'RANK': '1', 'WORLD_SIZE': '2', 'LOCAL_RANK': '1', 'MASTER_ADDR': '127.0.0.1',
           'MASTER_PORT': str(port)}
    res = run_check([PYTHON, '-m', 'opforge_ops.nodecheck', '--rendezvous-timeout', '3', '--quick'], env)
    assert res.returncode == 1, res.output
    line = _fail_line(res.stdout)
    assert f'cannot rendezvous at 127.0.0.1:{port}' in line, line
    assert 'firewall' in line and 'MASTER_ADDR' in line, line
