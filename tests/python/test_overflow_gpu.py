"""GPU tests of the overflow op: CUDA statistics against the CPU path on the same bytes, the
multi-tensor launch, the self-test and the report on a CUDA model. Skipped without a CUDA GPU."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
torch = pytest.importorskip("torch", reason="torch is needed for the GPU tests")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU (torch.cuda.is_available() is False): GPU tests skipped",
                allow_module_level=True)

import overflow_models  # noqa: E402
from opforge_ops import overflow  # noqa: E402

FIELDS = ("count", "nan", "posinf", "neginf", "zero", "subnormal", "over", "abs_min", "abs_max")
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
DTYPES += [getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, n)]


def same(a, b):
    for f in FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        if not (x == y or (x != x and y != y)):
            return f"{f}: {x} != {y}"
    return None


def planted(dtype, n, seed):
    """Random values with zeros, tiny and huge values, NaN and +/-inf at the ends and inside."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g, dtype=torch.float32) * 100
    if n:
        x[:: 97] = 0.0
        x[5:: 89] = 1e-40
        x[7:: 101] = 1e38
        for i, v in ((0, float("nan")), (n - 1, float("inf")), (n // 2, float("-inf"))):
            x[i] = v
    return x.to(dtype).cuda()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 1000, 1 << 20, (1 << 22) + 13])
def test_cuda_matches_cpu_on_the_same_bytes(dtype, n):
    x = planted(dtype, n, n)
    for view in (x, x[1:], x[3:]) if n > 3 else (x,):  # unaligned starts, ragged tails
        gpu = overflow.tensor_stats(view)
        cpu = overflow.tensor_stats(view.cpu())
        assert same(gpu, cpu) is None, (dtype, n, same(gpu, cpu))


def test_multi_tensor_launch_matches_single_calls():
    ts = [planted(dt, n, k) for k, (dt, n) in enumerate(
        [(torch.float16, 1000), (torch.float32, 0), (torch.bfloat16, 123457), (torch.float32, 1 << 21),
         (torch.float64, 77)] * 12)]  # 60 tensors: more than one launch's 48
    many = overflow.stats_many(ts)
    for t, s in zip(ts, many):
        assert same(s, overflow.tensor_stats(t.cpu())) is None


def test_fast_path_and_zero_heavy_tensors():
    relu = torch.relu(torch.randn(1 << 22, device="cuda", dtype=torch.float16))  # half zeros
    ordinary = torch.randn(1 << 22, device="cuda").clamp(-1e4, 1e4).abs() + 1.0  # all fast path
    for t in (relu, ordinary):
        assert same(overflow.tensor_stats(t), overflow.tensor_stats(t.cpu())) is None


def test_stream_of_the_caller_is_used():
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.full((1 << 20,), float("inf"), device="cuda", dtype=torch.float16)
        st = overflow.tensor_stats(x)
    assert st.posinf == 1 << 20


def test_selftest_passes():
    assert overflow.selftest() == []


@pytest.mark.parametrize("name", sorted(overflow_models.SCENARIOS))
def test_report_on_a_cuda_model(name):
    try:
        from transformers.debug_utils import DebugUnderflowOverflow as Reference
        want = overflow_models.run(Reference, name, device="cuda")
    except ImportError:  # no transformers here: the golden files (captured on CPU)
        with open(os.path.join(os.environ.get("OPFORGE_TEST_DATA", os.path.join(
                os.path.dirname(__file__), "..", "data")), "overflow", name + ".txt")) as f:
            want = f.read()
    assert overflow_models.run(overflow.DebugUnderflowOverflow, name, device="cuda") == want


@pytest.mark.parametrize("name", ["finite_trace", "trace_1_3", "abort_after"])
def test_deferred_report_on_a_cuda_model(name):
    # Launched per frame on the GPU, read once per batch: the same text as the per-frame mode.
    want = overflow_models.run(overflow.DebugUnderflowOverflow, name, device="cuda")
    got = overflow_models.run(lambda m, **kw: overflow.DebugUnderflowOverflow(m, deferred=True, **kw), name,
                              device="cuda")
    assert got == want


def test_pending_stats_one_read_for_many_launches():
    from opforge_ops.overflow._stats import PendingStats
    p = PendingStats()
    ts = [planted(torch.float16, 1000 + k, k) for k in range(5)] + [torch.ones(3)]  # one host tensor
    slots = [p.add([t]) [0] for t in ts]
    got = p.read()
    for t, slot in zip(ts, slots):
        assert same(got[slot], overflow.tensor_stats(t.cpu())) is None


def test_synchronous_and_deferred_reads_agree_on_many_streams():
    # stats_many reads into mapped host memory and waits; PendingStats launches into device chunks
    # and reads later. Same answers as each other and as the CPU, on many streams in turn and across
    # calls that reuse the scratch (more than one launch's 48 tensors, empty ones included).
    from opforge_ops.overflow._stats import PendingStats
    ts = [planted(dt, n, k) for k, (dt, n) in enumerate(
        [(torch.float16, 0), (torch.float32, 1), (torch.bfloat16, 5000), (torch.float16, (1 << 20) + 3),
         (torch.float64, 33)] * 11)]
    # ten streams: a thread's one-launch scratch serves eight, the others take init/scan/finalize
    streams = [torch.cuda.current_stream()] + [torch.cuda.Stream() for _ in range(9)]
    for round_ in range(12):
        with torch.cuda.stream(streams[round_ % len(streams)]):
            p = PendingStats()
            slots = p.add(ts)
            pending = p.read()
            fused = overflow.stats_many(ts)
        for t, slot, s in zip(ts, slots, fused):
            assert same(s, pending[slot]) is None, (round_, t.dtype, t.numel(), same(s, pending[slot]))
            if round_ in (0, 11):
                assert same(s, overflow.tensor_stats(t.cpu())) is None, (round_, t.dtype, t.numel())


def test_test_kernel_refuses_an_output_off_its_element_size():
    import ctypes
    from opforge_ops.overflow import _lib as L
    buf = torch.empty(1 << 12, dtype=torch.uint8, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    rc = L.lib().opforge_overflow_cuda_test_kernel(5, buf.data_ptr() + 2, 100, 0, 7, None, stream)
    assert rc == -22  # OPFORGE_OVERFLOW_EINVAL
    assert "aligned" in L.lib().opforge_overflow_last_error().decode()
    torch.cuda.synchronize()  # nothing was launched: the context is still good
    assert overflow.tensor_stats(torch.ones(10, device="cuda")).count == 10
