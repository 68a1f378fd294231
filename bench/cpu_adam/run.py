#!/usr/bin/python3
"""cpu_adam benchmark: parameter updates per second on N fp32 parameters (default 100 M), measured
side by side in one run: the dispatched SIMD path, each lower level (scalar = vectorisation
disabled, compiled with -fno-tree-vectorize), and torch.optim.Adam(foreach=True) on the same
threads where torch is installed. Targets: dispatched >= 4x scalar, >= 3x torch.

usage: bench/cpu_adam/run.py [N] [steps]   (builds the library with bench/build_ops.py)"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LIB_DIR = os.path.join(ROOT, 'build', 'bench-ops')


def best_of(fn, steps):
    fn(1)  # warm: page faults, thread start
    times = []
    for s in range(steps):
        t = time.perf_counter()
        fn(s + 2)
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000_000
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    subprocess.run([sys.executable, os.path.join(ROOT, 'bench', 'build_ops.py'), LIB_DIR, 'cpu_adam'],
                   check=True, stdout=subprocess.DEVNULL)
    os.environ['OPFORGE_OPS_LIB_DIR'] = LIB_DIR
    sys.path.insert(0, os.path.join(ROOT, 'src', 'python'))
    import numpy as np
    from opforge_ops import cpu_adam
    threads = len(os.sched_getaffinity(0))
    print(f'cpu_adam: {n:,} fp32 parameters, {threads} threads, best of {steps} steps, '
          f'CPU best SIMD level {cpu_adam.best_simd_level()}')
    rng = np.random.default_rng(0)
    p = rng.standard_normal(n, dtype=np.float32)
    g = (rng.standard_normal(n, dtype=np.float32) * 0.01)
    m = np.zeros(n, np.float32)
    v = np.zeros(n, np.float32)
    rates = {}
    best = cpu_adam.best_simd_level()
    for level in cpu_adam.SIMD_LEVELS[:cpu_adam.SIMD_LEVELS.index(best) + 1][::-1]:
        cpu_adam.set_simd_level(level)
        t = best_of(lambda s: cpu_adam.adam_step(p, g, m, v, step=s, lr=1e-3, weight_decay=0.01,
                                                 adamw=True, threads=threads), steps)
        rates[level] = n / t
        print(f'  opforge {level:<7} {t * 1e3:9.1f} ms/step  {n / t / 1e6:9.1f} M updates/s')
    # One thread: the compute-bound ratio, before memory bandwidth caps the multi-threaded one.
    one = {}
    for level in (best, 'scalar'):
        cpu_adam.set_simd_level(level)
        t = best_of(lambda s: cpu_adam.adam_step(p, g, m, v, step=s, lr=1e-3, weight_decay=0.01,
                                                 adamw=True, threads=1), steps)
        one[level] = n / t
        print(f'  opforge {level:<7} 1 thread {t * 1e3:9.1f} ms/step  {n / t / 1e6:9.1f} M updates/s')
    bw = rates[best] * 28 / 1e9
    print(f'  ({best}, {threads} threads: {bw:.1f} GB/s of memory traffic, 28 bytes per update)')
    cpu_adam.set_simd_level(best)
    try:
        import torch
    except ImportError:
        torch = None
        print('  torch: not installed, comparison skipped')
    if torch is not None:
        torch.set_num_threads(threads)
        tp = torch.from_numpy(p.copy()).requires_grad_(True)
        tp.grad = torch.from_numpy(g.copy())
        opt = torch.optim.Adam([tp], lr=1e-3, weight_decay=0.01, foreach=True)
        t = best_of(lambda s: opt.step(), steps)
        rates['torch'] = n / t
        print(f'  torch {torch.__version__} Adam(foreach=True) {t * 1e3:9.1f} ms/step  {n / t / 1e6:9.1f} M updates/s')
    print(f'ratio dispatched ({best}) / scalar: {rates[best] / rates["scalar"]:.2f}x (target >= 4x)')
    print(f'ratio dispatched ({best}) / scalar, 1 thread: {one[best] / one["scalar"]:.2f}x')
    if 'avx2' in rates and best != 'avx2':
        print(f'ratio avx2 / scalar: {rates["avx2"] / rates["scalar"]:.2f}x')
    if 'torch' in rates:
        print(f'ratio dispatched ({best}) / torch: {rates[best] / rates["torch"]:.2f}x (target >= 3x)')


if __name__ == '__main__':
    main()
