"""Who started this process and where the rendezvous is: torchrun, SLURM's srun, Open MPI's
mpirun, or nobody (then the local launcher starts the workers). Pure functions of the environment,
plus the local launcher itself."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Mapping, TextIO

DEFAULT_PORT = 29500  # torchrun's default master port


class LaunchError(ValueError):
    """The launcher's variables are incomplete or contradictory (exit 2)."""


@dataclass
class Launch:
    launcher: str  # 'torchrun', 'slurm', 'mpirun', 'local'
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    master_addr: str
    master_port: int
    agent_store: bool = False  # torchrun's agent already serves the store at master_addr:port
    listen_fd: int | None = None  # the local launcher hands rank 0 a bound, listening socket

    @property
    def endpoint(self) -> str:
        return f'{self.master_addr}:{self.master_port}'


def _int(env: Mapping[str, str], name: str) -> int:
    text = env.get(name, '')
    try:
        return int(text)
    except ValueError:
        raise LaunchError(f'{name}={text!r} is not an integer; the launcher sets it, so check the '
                          f'launch line') from None


def first_slurm_host(nodelist: str) -> str:
    """The first host of a SLURM node list: 'gpu[03-05,09],login1' -> 'gpu03'."""
    m = re.match(r'([^,\[]+)(\[([^\]]+)\])?', nodelist.strip())
    if not m:
        raise LaunchError(f'SLURM_JOB_NODELIST={nodelist!r} is not a node list')
    prefix, ranges = m.group(1), m.group(3)
    if not ranges:
        return prefix
    first = ranges.split(',')[0].split('-')[0]
    return prefix + first


def detect(env: Mapping[str, str], master_addr: str | None = None,
           master_port: int | None = None) -> Launch | None:
    """The launch this environment describes, or None when no launcher started this process.

    torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
    SLURM (srun): SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE or
    SLURM_TASKS_PER_NODE; the master is MASTER_ADDR or the first host of SLURM_JOB_NODELIST.
    Open MPI (mpirun): OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE; MASTER_ADDR required
    for more than one node (mpirun has no notion of one).
    """
    addr = master_addr or env.get('MASTER_ADDR')
    port = master_port or (_int(env, 'MASTER_PORT') if env.get('MASTER_PORT') else DEFAULT_PORT)
    if 'RANK' in env and 'WORLD_SIZE' in env and 'LOCAL_RANK' in env:
        if not addr:
            raise LaunchError('RANK and WORLD_SIZE are set but MASTER_ADDR is not; launch with '
                              'torchrun, or set MASTER_ADDR and MASTER_PORT')
        world = _int(env, 'WORLD_SIZE')
        return Launch('local' if env.get(WORKER_ENV) else 'torchrun', _int(env, 'RANK'), world, _int(env, 'LOCAL_RANK'),
                      _int(env, 'LOCAL_WORLD_SIZE') if 'LOCAL_WORLD_SIZE' in env else world,
                      addr, port, agent_store=env.get('TORCHELASTIC_USE_AGENT_STORE') == 'True')
    if 'OMPI_COMM_WORLD_RANK' in env:
        world = _int(env, 'OMPI_COMM_WORLD_SIZE')
        local_world = _int(env, 'OMPI_COMM_WORLD_LOCAL_SIZE') if 'OMPI_COMM_WORLD_LOCAL_SIZE' in env else world
        if not addr:
            if local_world != world:
                raise LaunchError('mpirun started ranks on several nodes but MASTER_ADDR is not set; '
                                  'pass -x MASTER_ADDR=<first node> -x MASTER_PORT=<free port> '
                                  '(or --master-addr)')
            addr = '127.0.0.1'
        return Launch('mpirun', _int(env, 'OMPI_COMM_WORLD_RANK'), world,
                      _int(env, 'OMPI_COMM_WORLD_LOCAL_RANK'), local_world, addr, port)
    if 'SLURM_PROCID' in env and 'SLURM_NTASKS' in env:
        world = _int(env, 'SLURM_NTASKS')
        per_node = env.get('SLURM_NTASKS_PER_NODE') or env.get('SLURM_TASKS_PER_NODE', '')
        m = re.match(r'\d+', per_node)
        local_world = int(m.group(0)) if m else world
        if not addr:
            if not env.get('SLURM_JOB_NODELIST'):
                raise LaunchError('SLURM_PROCID is set but neither MASTER_ADDR nor '
                                  'SLURM_JOB_NODELIST is; run inside an allocation (sbatch/salloc)')
            addr = first_slurm_host(env['SLURM_JOB_NODELIST'])
        return Launch('slurm', _int(env, 'SLURM_PROCID'), world,
                      _int(env, 'SLURM_LOCALID') if 'SLURM_LOCALID' in env else 0,
                      local_world, addr, port)
    return None


# ----------------------------------------------------------------------------- local launcher

WORKER_ENV = 'OPFORGE_NODECHECK_WORKER'  # set by the local launcher in the workers it starts
LISTEN_FD_ENV = 'OPFORGE_NODECHECK_LISTEN_FD'


def local_env(base: Mapping[str, str], rank: int, nproc: int, port: int,
              listen_fd: int | None) -> dict[str, str]:
    env = dict(base)
    for k in [k for k in env if k.startswith(('OMPI_COMM_WORLD_', 'SLURM_'))]:
        del env[k]  # the local launcher's workers are its own world, whatever started it
    env.update(RANK=str(rank), WORLD_SIZE=str(nproc), LOCAL_RANK=str(rank),
               LOCAL_WORLD_SIZE=str(nproc), MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port))
    env[WORKER_ENV] = '1'
    env.pop('TORCHELASTIC_USE_AGENT_STORE', None)
    # All workers are on this host: gloo talks over loopback rather than whatever the host
    # name resolves to.
    env.setdefault('GLOO_SOCKET_IFNAME', 'lo')
    if listen_fd is not None:
        env[LISTEN_FD_ENV] = str(listen_fd)
    else:
        env.pop(LISTEN_FD_ENV, None)
    return env


def run_local(argv: list[str], nproc: int, backstop_s: float, out: TextIO = sys.stdout) -> int:
    """Starts `nproc` workers of this module on this host and waits for them.

    Rank 0 gets a socket already bound to a free loopback port (no race with other programs that
    look for free ports), on which it serves the rendezvous store. The workers enforce the check's
    deadlines themselves; `backstop_s` only catches a worker that cannot (stuck in the kernel),
    which is then killed and named.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    procs: list[subprocess.Popen] = []
    cmd = [sys.executable, '-m', 'opforge_ops.nodecheck'] + argv
    try:
        for rank in range(nproc):
            fd = sock.fileno() if rank == 0 else None
            procs.append(subprocess.Popen(cmd, env=local_env(os.environ, rank, nproc, port, fd),
                                          pass_fds=(fd,) if fd is not None else ()))
        sock.close()  # rank 0 holds its own copy
        deadline = time.monotonic() + backstop_s
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        stuck = [r for r, p in enumerate(procs) if p.poll() is None]
        for r in stuck:
            procs[r].kill()
            procs[r].wait()
    except KeyboardInterrupt:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        return 130
    finally:
        sock.close()
    problems = []
    for r, p in enumerate(procs):
        if r in stuck:
            problems.append(f'rank {r} was still running {backstop_s:.0f} s after the start and '
                            f'was killed')
        elif p.returncode < 0:
            problems.append(f'rank {r} was killed by {signal.Signals(-p.returncode).name}')
    if problems:
        print('nodecheck (local launcher): ' + '; '.join(problems), file=out, flush=True)
    if procs and (0 in stuck or procs[0].returncode < 0):  # rank 0 could not say it itself
        print('FAIL: ' + '; '.join(problems), file=out, flush=True)
    codes = [p.returncode for p in procs]
    return 0 if all(c == 0 for c in codes) else 1
