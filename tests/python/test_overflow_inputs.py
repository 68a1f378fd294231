"""Inputs and outputs beyond the common case: numpy byte orders, bool/sparse/meta/Python-number inputs
to detect_overflow, numpy arrays passed to a module, deferred mode's first faulting frame and bounded
pending frames, file= closing and {rank}, logger= at logging's default level. The answers expected
here are transformers' (checked against the real class in torch_venv/test_overflow_transformers.py)
or, where transformers raises, the documented ones (docs/overflow.md)."""
import contextlib
import io
import logging
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
torch = pytest.importorskip("torch", reason="torch is needed for the overflow input tests")

import overflow_models  # noqa: E402
from opforge_ops import overflow  # noqa: E402

DATA = os.path.join(os.environ.get("OPFORGE_TEST_DATA",
                                   os.path.join(os.path.dirname(__file__), "..", "data")), "overflow")


def printed(fn, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        r = fn(*args)
    return r, out.getvalue()


@pytest.mark.parametrize("kind", ["f2", "f4", "f8"])
@pytest.mark.parametrize("order", [">", "<", "="])
def test_numpy_byte_orders_are_read_by_value(kind, order):
    a = np.array([1.5, np.nan, -3.0, np.inf, 0.0, 2.0 ** -20], dtype=order + kind)
    native = a.astype("=" + kind)
    s, n = overflow.tensor_stats(a), overflow.tensor_stats(native)
    assert (s.nan, s.posinf, s.zero, s.subnormal, s.count) == (n.nan, n.posinf, n.zero, n.subnormal, n.count) == (
        1, 1, 1, 1 if kind == "f2" else 0, 6)
    assert printed(overflow.detect_overflow, a, "be") == (True, "be has nans\nbe has infs\n")
    finite = np.array([1.0, -4.0], dtype=order + kind)
    st = overflow.tensor_stats(finite)
    assert (st.abs_min, st.abs_max) == (1.0, 4.0)


def test_detect_overflow_on_bool_sparse_meta_and_numbers():
    # transformers: bool -> False; sparse COO -> the stored values' nan/inf
    assert printed(overflow.detect_overflow, torch.tensor([True, False]), "b") == (False, "")
    sp = torch.sparse_coo_tensor([[0, 3]], [1.0, float("inf")], (5,))
    assert printed(overflow.detect_overflow, sp, "s") == (True, "s has infs\n")
    sp = torch.sparse_coo_tensor([[0, 3]], [float("nan"), 2.0], (5,))
    assert printed(overflow.detect_overflow, sp, "s") == (True, "s has nans\n")
    assert printed(overflow.detect_overflow, torch.tensor([3, -7]), "i") == (False, "")
    # where transformers raises: documented answers
    assert printed(overflow.detect_overflow, torch.empty(3, device="meta"), "m") == (False, "")
    assert printed(overflow.detect_overflow, float("inf"), "f") == (True, "f has infs\n")
    assert printed(overflow.detect_overflow, float("nan"), "f") == (True, "f has nans\n")
    assert printed(overflow.detect_overflow, 2.5, "f") == (False, "")
    with pytest.raises(TypeError, match="detect_overflow: expected"):
        overflow.detect_overflow("text", "t")


class TwoInputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)

    def forward(self, x, extra):
        return self.lin(x)


def test_numpy_array_passed_to_a_module_is_not_a_tensor():
    model = TwoInputs()
    out = io.StringIO()
    with contextlib.redirect_stdout(out), overflow.DebugUnderflowOverflow(model, trace_batch_nums=[0]):
        model(torch.ones(1, 2), np.array([np.nan, 1.0]))
    assert f"{'not a tensor':>17} input[1]\n" in out.getvalue()
    assert "has nans" not in out.getvalue()


def test_bool_and_sparse_tensors_in_a_frame_get_lines():
    # transformers raises on these (abs() of bool; min() of sparse): documented lines instead
    class Pass(torch.nn.Module):
        def forward(self, mask, sp):
            return mask

    model = Pass()
    out = io.StringIO()
    sp = torch.sparse_coo_tensor([[1]], [-4.0], (3,))
    with contextlib.redirect_stdout(out), overflow.DebugUnderflowOverflow(model, trace_batch_nums=[0]):
        model(torch.tensor([True, False]), sp)
    text = out.getvalue()
    assert "0.00e+00 1.00e+00 input[0]" in text
    assert "0.00e+00 4.00e+00 input[1]" in text


class Chain(torch.nn.Module):
    def __init__(self, n=6):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(2, 2) for _ in range(n))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Outer(torch.nn.Module):
    """A user hooks `Outer` but calls `outer.inner` directly: the root module never runs."""

    def __init__(self):
        super().__init__()
        self.inner = Chain()

    def forward(self, x):
        return self.inner(x)


def run_inner(debug_kwargs, calls, bad_call=None, bad_layer=3):
    torch.manual_seed(0)
    model = Outer()
    out = io.StringIO()
    err = "no error"
    with contextlib.redirect_stdout(out):
        d = overflow.DebugUnderflowOverflow(model, **debug_kwargs)
        try:
            for k in range(calls):
                if k == bad_call:
                    with torch.no_grad():
                        model.inner.layers[bad_layer].bias[0] = float("nan")
                model.inner(torch.ones(1, 2))
            d.remove()
        except ValueError as e:
            err = str(e)
    return d, out.getvalue(), err


def test_deferred_pending_frames_are_bounded_when_the_root_never_runs(monkeypatch):
    from opforge_ops.overflow import debug
    monkeypatch.setattr(debug, "_MAX_PENDING", 5)
    model = Outer()
    d = overflow.DebugUnderflowOverflow(model, deferred=True, max_frames_to_save=5)
    most = 0
    for _ in range(20):
        model.inner(torch.ones(1, 2))
        most = max(most, len(d._pending))
    assert d.total_calls == 20 * 7 and 0 < most < 5  # 7 frames a call, flushed whenever 5 were pending
    d.remove()
    d, text, err = run_inner(dict(deferred=True, max_frames_to_save=5), 20)
    assert err == "no error" and text == ""
    assert len(d._pending) == 0 and d.frames.maxlen == 5
    d, _, _ = run_inner(dict(deferred=True, max_frames_to_save=5), 1)
    assert d._handles == [] and d._pending == []


@pytest.mark.parametrize("max_frames", [3, 21])
def test_deferred_reports_the_first_faulting_frame_like_the_default_mode(max_frames):
    want = run_inner(dict(max_frames_to_save=max_frames), 5, bad_call=2)
    got = run_inner(dict(max_frames_to_save=max_frames, deferred=True), 5, bad_call=2)
    assert got[1] == want[1] and got[2] == want[2]
    assert "Detected inf/nan during batch_number=0" in want[1]
    assert want[1].count("has nans") == 2  # the bias and the output of the faulting layer
    assert got[0].batch_number == want[0].batch_number == 0


def test_deferred_detection_in_a_counted_batch_keeps_its_batch_number():
    model = overflow_models.Model()
    outs = []
    for deferred in (False, True):
        model = overflow_models.Model()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            d = overflow.DebugUnderflowOverflow(model, deferred=deferred)
            model(*overflow_models.batch(0))
            with torch.no_grad():
                model.pair.lin.weight[0, 0] = float("inf")
            with pytest.raises(ValueError, match="inf/nan detected"):
                model(*overflow_models.batch(1))
        outs.append((out.getvalue(), d.batch_number))
    assert outs[0] == outs[1]
    assert "batch_number=1\n" in outs[0][0]


def test_deferred_remove_reports_pending_frames():
    d, text, err = run_inner(dict(deferred=True, max_frames_to_save=50), 1, bad_call=0)
    assert "inf/nan detected" in err
    assert "Detected inf/nan during batch_number=0" in text and d._handles == []


@pytest.fixture
def no_rank(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)


def test_file_from_a_path_is_closed_by_remove_and_with(tmp_path, no_rank):
    model = overflow_models.Model()
    d = overflow.DebugUnderflowOverflow(model, trace_batch_nums=[0], file=str(tmp_path / "a.log"))
    model(*overflow_models.batch(0))
    fh = d._emit._fh
    assert fh is not None and not fh.closed
    d.remove()
    assert fh.closed
    golden = open(os.path.join(DATA, "finite_trace.txt")).read()
    assert golden.startswith(open(tmp_path / "a.log").read())
    with overflow.DebugUnderflowOverflow(model, trace_batch_nums=[0], file=str(tmp_path / "b.log")) as d:
        model(*overflow_models.batch(0))
        fh = d._emit._fh
    assert fh.closed
    f = open(tmp_path / "c.log", "w")  # a file object stays the caller's
    with overflow.DebugUnderflowOverflow(model, trace_batch_nums=[0], file=f):
        model(*overflow_models.batch(0))
    assert not f.closed
    f.close()


def test_rank_in_file_name_without_torch_distributed(tmp_path, monkeypatch, no_rank):
    model = overflow_models.Model()
    with overflow.DebugUnderflowOverflow(model, trace_batch_nums=[0], file=str(tmp_path / "out_{rank}.txt")):
        model(*overflow_models.batch(0))
    monkeypatch.setenv("RANK", "3")
    with overflow.DebugUnderflowOverflow(model, trace_batch_nums=[0], file=str(tmp_path / "out_{rank}.txt")):
        model(*overflow_models.batch(0))
    assert sorted(os.listdir(tmp_path)) == ["out_0.txt", "out_3.txt"]


def test_logger_at_the_default_level_still_gets_the_report():
    log = logging.getLogger("ovf-default-level")
    log.propagate = False
    records = []
    h = logging.Handler()
    h.emit = lambda rec: records.append((rec.levelno, rec.getMessage()))
    log.addHandler(h)
    assert log.getEffectiveLevel() == logging.WARNING
    model = overflow_models.Model()
    with overflow.DebugUnderflowOverflow(model, logger=log):
        model(*overflow_models.batch(0))
        with pytest.raises(ValueError):
            model(*overflow_models.batch(1, "nan"))
    assert records and all(level == logging.WARNING for level, _ in records)
    assert any(msg.startswith("\nDetected inf/nan during batch_number=1") for _, msg in records)
    log.setLevel(logging.INFO)
    records.clear()
    with overflow.DebugUnderflowOverflow(model, trace_batch_nums=[0], logger=log):
        model(*overflow_models.batch(0))
    assert records and all(level == logging.INFO for level, _ in records)


def test_permuted_views_and_integer_tensors_in_a_frame():
    # A permuted view of a contiguous tensor is read in place, an expanded one through a copy; an
    # integer tensor takes torch's computation: the lines are those of the values.
    class Pass(torch.nn.Module):
        def forward(self, a, b, c):
            return a

    base = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4) - 5.0
    base[1, 2, 3] = float("-inf")
    model = Pass()
    out = io.StringIO()
    with contextlib.redirect_stdout(out), overflow.DebugUnderflowOverflow(model, trace_batch_nums=[0]):
        model(base.permute(2, 0, 1), torch.tensor([1.5, -2.0]).expand(3, 2), torch.tensor([3, -7]))
    text = out.getvalue()
    assert "0.00e+00      inf input[0]\n" in text and "input[0] has infs\n" in text
    assert "1.50e+00 2.00e+00 input[1]\n" in text
    assert "3.00e+00 7.00e+00 input[2]\n" in text


class Tied(torch.nn.Module):
    """Two modules sharing one large weight (like T5's shared embedding and lm_head)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(300, 300, bias=False)
        self.b = torch.nn.Linear(300, 300, bias=False)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(self.a(x))


def test_large_parameter_statistics_reused_only_while_unchanged():
    model = Tied()
    with torch.no_grad():
        model.a.weight.copy_(torch.linspace(-1, 1, 90000).reshape(300, 300))
    x = torch.full((1, 300), 1e-3)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), overflow.DebugUnderflowOverflow(model, trace_batch_nums=[1, 2]) as d:
        model(x)  # batch 0 counts the root: statistics are reused from batch 1 on
        splices = []
        splice = d._splice
        d._splice = lambda scratch, k, hits, big: splices.append((bool(hits), bool(big))) or splice(
            scratch, k, hits, big)
        model(x)
        assert splices == [(False, True), (True, False)]  # read by `a`, reused by `b`

        def poison(module, inp):  # an in-place change between the two uses (version counter)
            with torch.no_grad():
                model.a.weight[0, 0] = float("inf")
        h = model.b.register_forward_pre_hook(poison)
        model(x)
        h.remove()
    lines = [line for line in out.getvalue().splitlines() if line.endswith(" weight")]
    assert len(lines) == 4 and lines[2] != lines[3] and lines[3].split()[1] == "inf"
    assert "weight has infs" in out.getvalue()
