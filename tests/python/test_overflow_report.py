"""Report text of opforge_ops.overflow.DebugUnderflowOverflow vs golden files captured from
transformers' own class (tests/data/overflow/capture_golden.py; versions in VERSIONS.txt)."""
import io
import logging
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
torch = pytest.importorskip("torch", reason="torch is needed for the report tests")

import overflow_models  # noqa: E402
from opforge_ops import overflow  # noqa: E402

DATA = os.path.join(os.environ.get("OPFORGE_TEST_DATA",
                                   os.path.join(os.path.dirname(__file__), "..", "data")), "overflow")


@pytest.mark.parametrize("name", sorted(overflow_models.SCENARIOS))
def test_report_matches_transformers(name):
    with open(os.path.join(DATA, name + ".txt")) as f:
        golden = f.read()
    assert overflow_models.run(overflow.DebugUnderflowOverflow, name) == golden


def test_native_library_is_used():
    s = overflow.tensor_stats(torch.tensor([1.0, -3.0, float("inf")]))
    assert (s.count, s.posinf, s.abs_min, s.abs_max) == (3, 1, 1.0, float("inf"))


def test_empty_and_storageless_tensors_get_a_line():
    model = torch.nn.Linear(0, 2)
    out = io.StringIO()
    import contextlib
    with contextlib.redirect_stdout(out):
        overflow.DebugUnderflowOverflow(model, trace_batch_nums=[0])
        model(torch.zeros(3, 0))
    text = out.getvalue()
    assert f"{'empty':>17} weight" in text
    assert f"{'empty':>17} input[0]" in text
    r = overflow.debug.analyse([torch.empty(4, device="meta")])[0]
    assert r.label == overflow.NO_STORAGE_LABEL


def test_hooks_removable_and_logger_output():
    model = overflow_models.Model()
    log = logging.getLogger("ovf-test")
    records = []
    h = logging.Handler()
    h.emit = lambda rec: records.append(rec.getMessage())
    log.addHandler(h)
    log.setLevel(logging.INFO)
    with overflow.DebugUnderflowOverflow(model, trace_batch_nums=[0], logger=log, extended=True):
        model(*overflow_models.batch(0))
    assert any("zeros=" in r and "near_overflow=" in r for r in records)
    n = len(records)
    model(*overflow_models.batch(1))  # hooks removed: nothing more
    assert len(records) == n


def test_detect_overflow_prints_like_transformers(capsys):
    assert overflow.detect_overflow(torch.tensor([float("nan"), float("inf")]), "x") is True
    assert capsys.readouterr().out == "x has nans\nx has infs\n"
    assert overflow.detect_overflow(torch.tensor([1.0]), "y") is False


def test_half_and_bfloat16_match_torch():
    for dt in (torch.float16, torch.bfloat16):
        x = torch.tensor([6.0e4, -1e-7, 0.0, 3.0, -2.5], dtype=dt)
        s = overflow.tensor_stats(x)
        a = x.abs()
        assert f"{s.abs_min:8.2e} {s.abs_max:8.2e}" == f"{a.min():8.2e} {a.max():8.2e}"


def test_selftest_skips_without_gpu():
    if torch.cuda.is_available():
        assert overflow.selftest() == []
    else:
        with pytest.raises(overflow.OverflowLibError):
            overflow.selftest()
        pytest.skip("no CUDA GPU: the GPU selftest cannot run here")


@pytest.mark.parametrize("name", sorted(overflow_models.SCENARIOS))
def test_deferred_mode_same_report(name):
    # Frames are read in batches and replayed in order: the same text, the same faulting frame and
    # batch number, the same error as the per-frame mode (golden files).
    golden = open(os.path.join(DATA, name + ".txt")).read()
    got = overflow_models.run(lambda m, **kw: overflow.DebugUnderflowOverflow(m, deferred=True, **kw), name)
    assert got == golden


def test_deferred_mode_keeps_no_tensor_alive():
    # Statistics are launched per frame; until the batch ends only numbers and labels are kept.
    model = overflow_models.Model()
    d = overflow.DebugUnderflowOverflow(model, deferred=True)
    seen = []

    def holds_tensor(x):
        if torch.is_tensor(x):
            return True
        return isinstance(x, (list, tuple)) and any(holds_tensor(y) for y in x)

    def check(module, input, output):  # runs after the debugger's hook of the same module
        seen.append(len(d._pending))
        assert not holds_tensor(d._pending)

    model.head.register_forward_hook(check)
    model(*overflow_models.batch(0))
    assert seen and seen[0] > 0 and d._pending == []
    d.remove()
