"""GPU tests of the overflow op: CUDA statistics against the CPU path on the same bytes, the
multi-tensor launch, the self-test and the report on a CUDA model. Skipped without a CUDA GPU."""
import contextlib
import io
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


def frame_records(data, k):
    from opforge_ops.overflow._stats import TensorStats, _unpacker
    v = _unpacker(k).unpack(data[:80 * k])
    return [TensorStats(v[j:j + 10]) for j in range(0, 10 * k, 10)]


def pack(ts):
    from opforge_ops.overflow import _stats
    s = _stats._scratch
    if len(ts) > s.cap:
        s.grow(len(ts))
    keep = _stats._describe(ts, 0.0, s.desc)
    return s.desc_addr, keep


def test_frame_buffer_one_read_for_many_launches_and_full_is_refused():
    from opforge_ops.overflow._stats import FrameBuffer
    fb = FrameBuffer(torch.cuda.current_device(), 6)
    ts = [planted(torch.float16, 1000 + k, k) for k in range(5)]
    firsts = []
    for t in ts:
        addr, keep = pack([t])
        firsts.append(fb.add(addr, 1))
    addr, keep = pack(ts[:2])
    assert firsts == [0, 1, 2, 3, 4] and fb.add(addr, 2) == -1  # 5 + 2 > 6: nothing launched
    got = frame_records(fb.read(), 5)
    for t, s in zip(ts, got):
        assert same(s, overflow.tensor_stats(t.cpu())) is None
    addr, keep = pack(ts[:2])  # packed again: tensor_stats above reused the descriptor scratch
    assert fb.add(addr, 2) == 0  # emptied by the read, reused
    assert [same(s, overflow.tensor_stats(t.cpu())) for t, s in zip(ts, frame_records(fb.read(), 2))] == [None] * 2
    fb.close()


def test_frame_buffer_waits_for_every_stream_it_was_given():
    # Launches on two streams, each behind a long kernel of its own; one read on a third stream must
    # see every record (the read waits on the streams' events, not on its own stream only).
    from opforge_ops.overflow._stats import FrameBuffer
    fb = FrameBuffer(torch.cuda.current_device(), 64)
    s1, s2, reader = torch.cuda.Stream(), torch.cuda.Stream(), torch.cuda.Stream()
    xs = []
    for k, s in enumerate((s1, s2, s1, s2)):
        with torch.cuda.stream(s):
            big = torch.randn(1 << 24, device="cuda")
            for _ in range(4):
                big = big * 1.0001  # keeps the stream busy before the launch
            x = big * 0 + float("inf") if k == 3 else big[:4096] + k
            addr, keep = pack([x])
            assert fb.add(addr, 1) == k
            xs.append(x)
    with torch.cuda.stream(reader):
        got = frame_records(fb.read(), 4)  # nothing above waited for s1 or s2
    torch.cuda.synchronize()
    for x, g in zip(xs, got):
        assert same(overflow.tensor_stats(x.cpu()), g) is None
    assert got[3].posinf == 1 << 24
    fb.close()


def test_deferred_mode_with_two_streams_reports_like_the_default_mode():
    # The model's modules run on two streams; the deferred report (read once at the batch end) is
    # the default mode's, fault included.
    class TwoStreams(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
            self.s = torch.cuda.Stream()

        def forward(self, x):
            with torch.cuda.stream(self.s):
                self.s.wait_stream(torch.cuda.current_stream())
                y = self.a(x)
            torch.cuda.current_stream().wait_stream(self.s)
            return self.b(y)

    def run(deferred):
        torch.manual_seed(0)
        model = TwoStreams().cuda()
        out = io.StringIO()
        err = "no error"
        with contextlib.redirect_stdout(out):
            overflow.DebugUnderflowOverflow(model, deferred=deferred)
            try:
                for k in range(3):
                    if k == 2:
                        with torch.no_grad():
                            model.a.bias[1] = float("inf")
                    model(torch.ones(2, 4, device="cuda"))
            except ValueError as e:
                err = str(e)
        return out.getvalue(), err

    assert run(True) == run(False)
    assert "Detected inf/nan during batch_number=2" in run(False)[0]


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
