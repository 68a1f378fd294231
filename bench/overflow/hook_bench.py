"""Whole-model hook overhead: no hooks / transformers' DebugUnderflowOverflow / opforge's, timed
round-robin in one run (each round runs every variant once, in turn), medians of the step times.
Overhead = median(variant) - median(plain); the ratio is transformers' overhead / opforge's.
Also checks that the two report texts are identical (a trace of one batch).
usage: PYTHONPATH=src/python OPFORGE_OPS_LIB_DIR=... VENV/bin/python bench/overflow/hook_bench.py
           [--device cpu|cuda] [--models tiny,small] [--rounds N] [--profile] [--proxy]
--proxy: the CPU proxy of the per-hook bookkeeping (no GPU needed). The hooks run on CPU tensors
  with the statistics pass replaced by a native no-op of the same signature
  (opforge_overflow_stats_cpu_noop), so what remains is the Python work around the native call.
  One step's hook calls (module, input, output) are recorded, then replayed round-robin straight
  into each hook function: do-nothing hooks / opforge default / opforge deferred=True. Bookkeeping
  = (median replay time - the do-nothing hooks' median) / calls; torch's own cost of calling a hook
  is the same for every variant and is not in the replay. Target: <= 5 us per hook.
Models (T5ForConditionalGeneration from a config, random weights, eval, no_grad):
  tiny:  d_model 32, d_kv 8, d_ff 37, 5+5 layers, 4 heads, vocab 1103 (the size of transformers'
         tiny-random T5 test models), batch 2 x 16 tokens
  small: t5-small's shape (d_model 512, d_ff 2048, 6+6 layers, 8 heads, vocab 32128), batch 4 x 64 tokens
"""
import argparse
import contextlib
import io
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers.debug_utils import DebugUnderflowOverflow as TfDebug  # noqa: E402

from opforge_ops.overflow import DebugUnderflowOverflow as OpDebug  # noqa: E402

MODELS = {
    "tiny": (dict(vocab_size=1103, d_model=32, d_kv=8, d_ff=37, num_layers=5, num_heads=4), (2, 16)),
    "small": (dict(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_heads=8), (4, 64)),
}


def build(name, device, dtype):
    transformers.set_seed(0)  # the same weights for every variant: the report texts must agree
    cfg, _ = MODELS[name]
    return transformers.T5ForConditionalGeneration(transformers.T5Config(**cfg)).to(device, dtype).eval()


def inputs(name, device):
    _, (b, n) = MODELS[name]
    ids = (torch.arange(b * n, device=device).reshape(b, n) * 7) % MODELS[name][0]["vocab_size"]
    return dict(input_ids=ids, decoder_input_ids=ids)


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def measure(name, device, dtype, rounds, profile):
    x = inputs(name, device)
    variants = {"plain": build(name, device, dtype), "transformers": build(name, device, dtype),
                "opforge": build(name, device, dtype)}
    hooks = {"transformers": TfDebug(variants["transformers"]), "opforge": OpDebug(variants["opforge"])}
    # the deferred mode: statistics into the frame buffer per frame (on CUDA launches), one read per batch
    variants["deferred"] = build(name, device, dtype)
    hooks["deferred"] = OpDebug(variants["deferred"], deferred=True)
    # the floor: a forward hook that does nothing, on every module (torch's own cost of calling hooks)
    variants["empty"] = build(name, device, dtype)
    variants["empty"].apply(lambda m: m.register_forward_hook(lambda *a: None))
    # On CPU the clock is the thread's CPU time (one torch thread: the whole step runs on this thread),
    # which a loaded shared machine disturbs far less than the wall clock; on CUDA the wall clock.
    clock = time.perf_counter if device == "cuda" else time.thread_time
    times = {k: [] for k in variants}
    with torch.no_grad():
        for k, m in variants.items():  # warm-up
            m(**x)
        sync(device)
        for _ in range(rounds):
            for k, m in variants.items():
                t0 = clock()
                m(**x)
                sync(device)
                times[k].append(clock() - t0)
    calls = hooks["opforge"].total_calls // (rounds + 1)
    med = {k: statistics.median(v) for k, v in times.items()}
    over_tf, over_op = med["transformers"] - med["plain"], med["opforge"] - med["plain"]
    # the same report: a trace of the next batch from both classes
    texts = []
    for cls in (TfDebug, OpDebug):
        m = build(name, device, dtype)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), torch.no_grad():
            cls(m, trace_batch_nums=[0])
            m(**x)
        texts.append(out.getvalue())
    print(f"{name:5s} {str(dtype).replace('torch.', ''):8s} {device}: {calls} hook calls/step | step plain "
          f"{med['plain'] * 1e3:8.2f} ms | transformers +{over_tf * 1e3:8.2f} ms "
          f"({over_tf / calls * 1e6:6.1f} us/hook) | opforge +{over_op * 1e3:7.2f} ms "
          f"({over_op / calls * 1e6:5.1f} us/hook) | {over_tf / max(over_op, 1e-9):5.1f}x less overhead "
          f"(target >= {5 if name == 'tiny' else 20}) | same text: {texts[0] == texts[1]} "
          f"({len(texts[1].splitlines())} lines) | medians of {rounds} rounds, {clock.__name__}")
    floor = med["empty"] - med["plain"]
    print(f"{name:5s} hooks that do nothing: +{floor * 1e3:7.2f} ms ({floor / calls * 1e6:5.1f} us/hook) | above that: "
          f"transformers {(over_tf - floor) / calls * 1e6:6.1f} us/hook, opforge {(over_op - floor) / calls * 1e6:5.1f} us/hook")
    if "deferred" in med:  # always there
        over_d = med["deferred"] - med["plain"]
        print(f"{name:5s} deferred=True: opforge +{over_d * 1e3:7.2f} ms ({over_d / calls * 1e6:5.1f} us/hook) | "
              f"{over_tf / max(over_d, 1e-9):5.1f}x less overhead than transformers | "
              f"{over_d / max(floor, 1e-9):4.2f}x the do-nothing hooks' cost (target <= 2)")
    if profile:
        import cProfile
        import pstats
        for k in ("opforge", "deferred"):
            if k not in variants:
                continue
            m = variants[k]
            print(f"--- profile: {k}, 20 steps")
            with torch.no_grad():
                cProfile.runctx("for _ in range(20): m(**x)", globals(), locals(), "/tmp/hook_bench.prof")
            pstats.Stats("/tmp/hook_bench.prof").sort_stats("tottime").print_stats(22)
    return texts[0] == texts[1]


def proxy(name, dtype, rounds):
    """The CPU proxy (see the module doc); True when the replays of both modes detect nothing."""
    import ctypes

    from opforge_ops.overflow import _lib, _stats
    noop = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)(
        ("opforge_overflow_stats_cpu_noop", _lib.lib()))
    model = build(name, "cpu", dtype)
    x = inputs(name, "cpu")
    calls = []
    rec = [m.register_forward_hook(lambda m, i, o: calls.append((m, i, o))) for m in model.modules()]
    with torch.no_grad():
        model(**x)
    for h in rec:
        h.remove()
    hooks = {"empty": lambda m, i, o: None}
    # every CPU statistics call of the package goes through this one bound function
    _stats._bare["opforge_overflow_stats_cpu_multi"] = noop
    for k, kw in (("default", {}), ("deferred", {"deferred": True})):
        d = OpDebug(model, **kw)
        d.remove()  # called directly below, never through the model
        hooks[k] = d.forward_hook
    clock = time.thread_time
    times = {k: [] for k in hooks}
    for _ in range(3):  # warm-up
        for fn in hooks.values():
            for m, i, o in calls:
                fn(m, i, o)
    for _ in range(rounds):
        for k, fn in hooks.items():
            t0 = clock()
            for m, i, o in calls:
                fn(m, i, o)
            times[k].append(clock() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    n = len(calls)
    per = {k: (med[k] - med["empty"]) / n * 1e6 for k in ("default", "deferred")}
    print(f"{name:5s} {str(dtype).replace('torch.', ''):8s} cpu proxy: {n} hook calls/step | do-nothing hooks "
          f"{med['empty'] / n * 1e6:5.2f} us/hook (replay) | bookkeeping above them: default {per['default']:6.2f} "
          f"us/hook, deferred {per['deferred']:6.2f} us/hook (target <= 5) | medians of {rounds} replays, "
          f"{clock.__name__}")
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--models", default="tiny,small")
    ap.add_argument("--dtype", default=None, help="float32 (CPU default) or float16 (CUDA default)")
    ap.add_argument("--rounds", type=int, default=0, help="default: 40 tiny, 7 small")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--proxy", action="store_true", help="the CPU proxy of the per-hook bookkeeping")
    a = ap.parse_args()
    torch.set_num_threads(1)  # a shared machine: one thread keeps the medians steady
    dtype = getattr(torch, a.dtype or ("float16" if a.device == "cuda" else "float32"))
    dev = torch.cuda.get_device_name() if a.device == "cuda" else (platform.processor() or platform.machine())
    print(f"hook_bench: {dev}, torch {torch.__version__}, transformers {transformers.__version__}, "
          f"python {platform.python_version()}, torch threads 1")
    ok = True
    if a.proxy:
        for name in a.models.split(","):
            ok &= proxy(name, torch.float32, a.rounds or 200)
        sys.exit(0 if ok else 1)
    for name in a.models.split(","):
        ok &= measure(name, a.device, dtype, a.rounds or (40 if name == "tiny" else 7), a.profile)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
