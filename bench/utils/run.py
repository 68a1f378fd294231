#!/usr/bin/python3
"""utils benchmark: flatten / unflatten GB/s against a plain memcpy loop over the same members,
side by side in one run. Members: a mix of sizes (DeepSpeed flattens whole parameter groups),
N MiB in total (default 512).

usage: bench/utils/run.py [MiB] [repeats]   (builds the library with bench/build_ops.py)"""
import ctypes
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LIB_DIR = os.path.join(ROOT, 'build', 'bench-ops')


def best_of(fn, repeats):
    fn()
    best = float('inf')
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 512
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    subprocess.run([sys.executable, os.path.join(ROOT, 'bench', 'build_ops.py'), LIB_DIR, 'utils'],
                   check=True, stdout=subprocess.DEVNULL)
    os.environ['OPFORGE_OPS_LIB_DIR'] = LIB_DIR
    sys.path.insert(0, os.path.join(ROOT, 'src', 'python'))
    import numpy as np
    from opforge_ops import utils
    total = mib << 20
    rng = np.random.default_rng(0)
    sizes = []
    while sum(sizes) < total:
        sizes.append(int(min(total - sum(sizes), rng.choice([4096, 65536, 1 << 20, 16 << 20, 64 << 20]))))
    members = [np.ones(s // 4, np.float32) for s in sizes]
    flat = np.empty(sum(m.size for m in members), np.float32)
    threads = len(os.sched_getaffinity(0))

    def memcpy_loop():
        off = flat.ctypes.data
        for m in members:
            ctypes.memmove(off, m.ctypes.data, m.nbytes)
            off += m.nbytes

    def ours(t):
        return lambda: utils.flatten_into(members, flat, threads=t)

    def ours_alloc(t):
        return lambda: utils.flatten(members, threads=t)

    def ours_back(t):
        return lambda: utils.unflatten_into(flat, members, threads=t)

    flat[:] = 0
    print(f'utils: {len(members)} members, {total / 2**20:.0f} MiB in total, best of {repeats}, '
          f'{threads} usable CPUs (GB/s = 1e9 bytes copied per second)')
    rows = [('memcpy loop (ctypes.memmove)', memcpy_loop),
            ('flatten_into, 1 thread', ours(1)), (f'flatten_into, {threads} threads', ours(0)),
            (f'flatten (new array), {threads} thr', ours_alloc(0)),
            ('unflatten_into, 1 thread', ours_back(1)), (f'unflatten_into, {threads} threads', ours_back(0))]
    rates = {}
    for name, fn in rows:
        t = best_of(fn, repeats)
        rates[name] = total / t / 1e9
        print(f'  {name:<32} {rates[name]:7.2f} GB/s')
    base = rates['memcpy loop (ctypes.memmove)']
    print(f'ratio flatten_into ({threads} threads) / memcpy loop: {rates[f"flatten_into, {threads} threads"] / base:.2f}x')
    print(f'ratio flatten_into (1 thread) / memcpy loop: {rates["flatten_into, 1 thread"] / base:.2f}x')
    print(f'ratio unflatten_into ({threads} threads) / memcpy loop: {rates[f"unflatten_into, {threads} threads"] / base:.2f}x')
    print('(flatten allocates its result each call, so it also pays the page faults of fresh memory)')


if __name__ == '__main__':
    main()
