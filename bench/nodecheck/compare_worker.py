"""One rank of bench/nodecheck/run.py's busbw comparison: nodecheck's timed all_reduce loop
(worker.time_collective) and the same loop written directly against torch.distributed, alternated
round by round in the same process group; busbw as nccl-tests defines it, time averaged over the
ranks."""
import os
import statistics
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from opforge_ops.nodecheck import bandwidth as bw
from opforge_ops.nodecheck.worker import time_collective

ROUNDS = 5


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
    for _ in range(ROUNDS):
        ours.append(mean_over_ranks(time_collective(torch, dist, 'all_reduce', size, n, device)[1], device))
        theirs.append(mean_over_ranks(direct(size, device), device))
    a = bw.busbw_gbps('all_reduce', size, statistics.median(ours), n)
    b = bw.busbw_gbps('all_reduce', size, statistics.median(theirs), n)
    if rank == 0:
        print(f'  all_reduce {bw.human(size)} busbw, {n} ranks ({backend}), median of {ROUNDS} rounds '
              f'x {bw.iterations(size)} calls:')
        print(f'    nodecheck                  {a:8.3f} GB/s')
        print(f'    torch.distributed directly {b:8.3f} GB/s')
        print(f'    ratio nodecheck / direct   {a / b:8.3f}   (target >= 0.95)')
    dist.destroy_process_group()


if __name__ == '__main__':
    main()
