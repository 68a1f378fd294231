"""CPU benchmark: fused statistics (one thread) vs the numpy composition and vs np.sum.
usage: PYTHONPATH=src/python OPFORGE_OPS_LIB_DIR=... /usr/bin/python3 bench/overflow/cpu_bench.py [MiB]"""
import os
import platform
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

from opforge_ops.overflow import _lib, tensor_stats  # noqa: E402


def best(fn, reps=5):
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t)


def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    nbytes = mib << 20
    rng = np.random.default_rng(0)
    ref32 = rng.standard_normal(nbytes // 4, dtype=np.float32)
    print(f"cpu: {platform.processor() or platform.machine()}, isa={_lib.lib().opforge_overflow_cpu_isa().decode()}, "
          f"{mib} MiB per array, best of 5, single thread")
    t_sum = best(lambda: np.sum(ref32))
    print(f"np.sum fp32 (bandwidth reference): {nbytes / t_sum / 1e9:7.2f} GB/s")
    for dt in (np.float32, np.float16):
        # the same number of bytes for every dtype (fp16 holds twice as many elements)
        n = nbytes // np.dtype(dt).itemsize
        a = ref32 if dt == np.float32 else rng.standard_normal(n, dtype=np.float32).astype(dt)
        assert a.nbytes == nbytes

        def compose():
            b = np.abs(a)
            b.min(), b.max(), np.isnan(a).any(), np.isinf(a).any()

        t_fused = best(lambda: tensor_stats(a))
        t_np = best(compose, 3)
        print(f"{np.dtype(dt).name:8s} fused {nbytes / t_fused / 1e9:7.2f} GB/s | numpy composition "
              f"{nbytes / t_np / 1e9:7.2f} GB/s | fused/composition {t_np / t_fused:5.2f}x (target >= 4) | "
              f"fused/np.sum {t_sum / t_fused:5.2f}x (target >= 0.8)")


if __name__ == "__main__":
    main()
