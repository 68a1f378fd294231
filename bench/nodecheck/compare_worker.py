"""One rank of bench/nodecheck/run.py's busbw comparison: nodecheck's timed all_reduce loop
(worker.time_collective) and the same loop written directly against torch.distributed, in the same
process group, alternated A B B A round by round so that neither always runs first; busbw as
nccl-tests defines it from the time averaged over the ranks; the best and the median round of
each (the best is the steadier figure on a shared machine)."""
import os
import statistics
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from opforge_ops.nodecheck import bandwidth as bw
from opforge_ops.nodecheck.worker import time_collective

ROUNDS = 8  # even: each order A B / B A equally often


def direct(size, device):
    t = torch.ones(size // 4, dtype=torch.float32, device=device)
    iters = bw.iterations(size)
    dist.all_reduce(t)
    if device.type == 'cuda':
        torch.cuda.synchronize()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t)
    if device.type == 'cuda':
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters


def mean_over_ranks(seconds, device):
    t = torch.tensor([seconds], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.item() / dist.get_world_size()


def main():
    size = int(sys.argv[1])
    gpus = torch.cuda.device_count()
    backend = 'nccl' if gpus >= int(os.environ['WORLD_SIZE']) else 'gloo'
    rank = int(os.environ['RANK'])
    device = torch.device('cuda', rank) if backend == 'nccl' else torch.device('cpu')
    if backend == 'nccl':
        torch.cuda.set_device(device)
    dist.init_process_group(backend, timeout=timedelta(seconds=600))
    n = dist.get_world_size()
    ours, theirs = [], []
    def a():
        ours.append(mean_over_ranks(time_collective(torch, dist, 'all_reduce', size, n, device)[1], device))

    def b():
        theirs.append(mean_over_ranks(direct(size, device), device))
    for i in range(ROUNDS):
        for f in ((a, b) if i % 2 == 0 else (b, a)):
            f()
    if rank == 0:
        print(f'  all_reduce {bw.human(size)} busbw, {n} ranks ({backend}), {ROUNDS} rounds x '
              f'{bw.iterations(size)} calls each, GB/s:     best   median')
        rows = []
        for name, times in (('nodecheck', ours), ('torch.distributed directly', theirs)):
            best = bw.busbw_gbps('all_reduce', size, min(times), n)
            med = bw.busbw_gbps('all_reduce', size, statistics.median(times), n)
            rows.append((best, med))
            print(f'    {name:<28} {best:8.3f} {med:8.3f}')
        print(f'    ratio nodecheck / direct     {rows[0][0] / rows[1][0]:8.3f} '
              f'{rows[0][1] / rows[1][1]:8.3f}   (target >= 0.95)')
    dist.destroy_process_group()


if __name__ == '__main__':
    main()
