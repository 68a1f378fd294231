#!/usr/bin/python3
"""nodecheck benchmark, side by side in one run:
1. the whole check's wall time (`--quick`, the local launcher) for 2 and 4 local processes, next
   to the wall time of `import torch` alone (most of the check's time);
2. all_reduce busbw at the largest size of the CPU sweep (256 MiB; gloo here, NCCL where there
   are >= 2 GPUs) measured by nodecheck's timed loop and by torch.distributed called directly,
   alternating in the same processes (target ratio >= 0.95: the check adds nothing to what it
   measures).

usage: bench/nodecheck/run.py [--size 256M] [--nproc 2,4] [--repeats 3] [--only wall|busbw]
Runs with the PyPI torch environment ($OPFORGE_TORCH_VENV, default ~/.cache/opforge/torch-venv)
and the opforge_ops on PYTHONPATH (default: the source tree)."""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VENV = os.environ.get('OPFORGE_TORCH_VENV') or os.path.expanduser('~/.cache/opforge/torch-venv')
PYTHON = os.path.join(VENV, 'bin', 'python')


def env():
    e = dict(os.environ, GLOO_SOCKET_IFNAME='lo', OMP_NUM_THREADS='1')
    e.setdefault('PYTHONPATH', os.path.join(ROOT, 'src', 'python'))
    return e


def wall(cmd):
    t = time.perf_counter()
    res = subprocess.run(cmd, env=env(), capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f'failed: {" ".join(cmd)}\n{res.stdout}{res.stderr}')
    return time.perf_counter() - t, res.stdout


def compare(nproc, size):
    """Starts `nproc` ranks of compare_worker.py and returns rank 0's output."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(nproc):
        e = dict(env(), RANK=str(r), WORLD_SIZE=str(nproc), MASTER_ADDR='127.0.0.1',
                 MASTER_PORT=str(port))
        procs.append(subprocess.Popen([PYTHON, os.path.join(HERE, 'compare_worker.py'), str(size)],
                                      env=e, stdout=subprocess.PIPE, text=True))
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        sys.exit('compare_worker failed:\n' + '\n'.join(outs))
    return outs[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--size', default='256M')
    ap.add_argument('--nproc', default='2,4')
    ap.add_argument('--repeats', type=int, default=3)
    ap.add_argument('--only', choices=('wall', 'busbw'), default=None)
    args = ap.parse_args()
    sys.path.insert(0, env()['PYTHONPATH'].split(os.pathsep)[0])
    from opforge_ops.nodecheck import bandwidth as bw
    size = bw.parse_size(args.size)
    print(subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip())
    print(f'nodecheck: {os.cpu_count()} CPUs, torch from {VENV}, median of {args.repeats}')
    if args.only != 'busbw':
        walls(args)
    if args.only != 'wall':
        for n in [int(x) for x in args.nproc.split(',')]:
            print(compare(n, size).rstrip())


def walls(args):
    imp = statistics.median(wall([PYTHON, '-c', 'import torch'])[0] for _ in range(args.repeats))
    print(f'  import torch alone                    {imp:6.2f} s')
    for n in [int(x) for x in args.nproc.split(',')]:
        t = statistics.median(wall([PYTHON, '-m', 'opforge_ops.nodecheck', '--nproc', str(n),
                                    '--quick'])[0] for _ in range(args.repeats))
        print(f'  check --quick, {n} local processes     {t:6.2f} s   (target < 10 s; '
              f'{t - imp:.2f} s beyond one import)')


if __name__ == '__main__':
    main()
