"""Per-call latency of one small statistics read on the GPU, and of what it is made of, side by side
(needs a CUDA GPU): where the hook's time per module goes when the tensors are small.
usage: PYTHONPATH=... python bench/overflow/latency.py"""

import torch

from gpu_bench import wall  # this folder is on sys.path when run as a script
from opforge_ops.overflow import _stats, tensor_stats, stats_many


def per_call(fn, reps=2000):
    return wall(fn, reps, warmup=50) * 1e6


def main():
    x = torch.randn(4096, device="cuda", dtype=torch.float16)
    four = [torch.randn(n, device="cuda", dtype=torch.float16) for n in (4096, 512, 32768, 16)]
    s = _stats._scratch
    _stats._describe([x], 0.0, s.desc)
    dev = x.get_device()
    fn = _stats._cuda_fn()
    raw = torch._C._cuda_getCurrentRawStream
    rows = [
        ("torch.cuda.synchronize()", lambda: torch.cuda.synchronize()),
        ("x.abs().max().item()", lambda: x.abs().max().item()),
        ("transformers per tensor (4 reads)", lambda: (x.abs().min().item(), x.abs().max().item(),
                                                       torch.isnan(x).any().item(), torch.isinf(x).any().item())),
        ("native sync read, 1 tensor (ctypes)", lambda: fn(s.desc_addr, 1, s.out_addr, raw(dev))),
        ("tensor_stats(x)", lambda: tensor_stats(x)),
        ("stats_many(4 tensors)", lambda: stats_many(four)),
        ("current_device()+raw stream", lambda: (torch.cuda.current_device(), raw(dev))),
        ("current_stream(dev).cuda_stream", lambda: torch.cuda.current_stream(dev).cuda_stream),
        ("with torch.cuda.device(dev)", lambda: torch.cuda.device(dev).__enter__()),
    ]
    p = _stats.FrameBuffer(dev, 1 << 20)
    keep = _stats._describe([x], 0.0, s.desc)
    rows.append(("FrameBuffer.add(1 tensor), no read", lambda: p.add(s.desc_addr, 1)))
    print(f"latency: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for name, f in rows:
        print(f"{name:40s} {per_call(f):8.1f} us/call")
        if p.used:
            p.read()
    del keep


if __name__ == "__main__":
    main()
