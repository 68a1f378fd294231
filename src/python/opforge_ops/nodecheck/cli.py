"""Command line of the node check: parse, decide who launched us, run a rank or the local
launcher. Exit 0 when everything passed, 1 on any failure, 2 for bad flags or launcher variables.
"""
from __future__ import annotations

import argparse
import os
import sys

from . import bandwidth as bw
from .launch import WORKER_ENV, LaunchError, detect, run_local


def _size(text: str) -> int:
    try:
        return bw.parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog='python -m opforge_ops.nodecheck',
        description='Check that every rank loads the prebuilt ops, every GPU computes and every '
                    'process can talk. Launch it like training (torchrun, srun, mpirun) or alone '
                    '(it then starts --nproc local workers).')
    p.add_argument('--nproc', type=int, default=None,
                   help='workers to start when no launcher started this process '
                        '(default: the number of GPUs, or 2 without GPUs)')
    p.add_argument('--quick', action='store_true', help='skip the bandwidth sweep')
    p.add_argument('--json', dest='json_path', metavar='PATH',
                   help='write the report as JSON (rank 0)')
    p.add_argument('--timeout', type=float, default=60.0, metavar='S',
                   help='deadline of each step in seconds (default 60)')
    p.add_argument('--rendezvous-timeout', type=float, default=120.0, metavar='S',
                   help='deadline of the rendezvous, which waits for every rank to start '
                        '(default 120)')
    p.add_argument('--min-bytes', type=_size, default=8, metavar='SIZE',
                   help='smallest bandwidth message (default 8)')
    p.add_argument('--max-bytes', type=_size, default=None, metavar='SIZE',
                   help='largest bandwidth message (default 1G on GPUs, 256M on CPU; '
                        'capped by free memory)')
    p.add_argument('--factor', type=int, default=2, help='size step of the sweep (default 2)')
    p.add_argument('--backend', choices=('auto', 'nccl', 'gloo'), default='auto',
                   help='auto: nccl with GPUs, gloo without')
    p.add_argument('--master-addr', default=None,
                   help='rendezvous address when the launcher gives none (mpirun, srun)')
    p.add_argument('--master-port', type=int, default=None,
                   help='rendezvous port when the launcher gives none (default 29500)')
    return p


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(args_list)
    if min(args.timeout, args.rendezvous_timeout) <= 0 or args.factor < 2 or \
            (args.nproc is not None and args.nproc < 1):
        print('nodecheck: --timeout and --rendezvous-timeout must be > 0, --factor >= 2 and '
              '--nproc >= 1', file=sys.stderr)
        return 2
    try:
        launch = detect(os.environ, args.master_addr, args.master_port)
    except LaunchError as e:
        print(f'nodecheck: {e}', file=sys.stderr)
        return 2
    if launch is None:
        nproc = args.nproc
        if nproc is None:
            from .._native import device_capabilities
            nproc = len(device_capabilities()) or 2
        steps = 14 + (0 if args.quick else 2 * len(bw.sizes(args.min_bytes, args.max_bytes or (1 << 30),
                                                             args.factor)))
        return run_local(args_list, nproc,
                         backstop_s=args.rendezvous_timeout + 120 + args.timeout * steps + 30)
    if os.environ.get(WORKER_ENV) is None and args.nproc is not None:
        print(f'nodecheck: --nproc is for a check started without a launcher; {launch.launcher} '
              f'already started {launch.world_size} ranks', file=sys.stderr)
        return 2
    from .worker import Options, run
    return run(launch, Options(timeout=args.timeout, rendezvous_timeout=args.rendezvous_timeout,
                               quick=args.quick, json_path=args.json_path,
                               min_bytes=args.min_bytes, max_bytes=args.max_bytes,
                               factor=args.factor, backend=args.backend))
