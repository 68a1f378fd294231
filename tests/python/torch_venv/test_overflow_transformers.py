"""opforge's overflow layer against transformers' real class and detect_overflow on the same inputs
(PyPI torch and transformers, tests/python/torch_venv/pytest.sh): the golden scenarios, a tiny T5 in
fp32/bf16 (the benchmark's model), detect_overflow on bool/sparse/integer/complex/empty tensors, a
numpy array passed to a module, and the inputs where transformers raises (documented answers)."""
import contextlib
import io
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import debug_utils as du  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import overflow_models  # noqa: E402
from opforge_ops import overflow  # noqa: E402

DATA = os.path.join(os.environ.get("OPFORGE_TEST_DATA", os.path.join(HERE, "..", "..", "data")), "overflow")


def printed(fn, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            r = fn(*args)
        except Exception as e:  # noqa: BLE001  (the exception is the answer being compared)
            r = e
    return r, out.getvalue()


@pytest.mark.parametrize("name", sorted(overflow_models.SCENARIOS))
def test_golden_scenarios_with_this_transformers_and_torch(name):
    golden = open(os.path.join(DATA, name + ".txt")).read()
    assert overflow_models.run(du.DebugUnderflowOverflow, name) == golden
    assert overflow_models.run(overflow.DebugUnderflowOverflow, name) == golden
    assert overflow_models.run(lambda m, **kw: overflow.DebugUnderflowOverflow(m, deferred=True, **kw), name) == golden


@pytest.mark.parametrize("fault", overflow_models.TWICE_FAULTS)
@pytest.mark.parametrize("records", [None, 8])
def test_deferred_faults_match_transformers(fault, records, monkeypatch):
    # the fault in a batch's first frame, its last (the root's), the second call of a module called
    # twice; records=8: the frame buffer fills twice a batch before the fault is read
    if records is not None:
        from opforge_ops.overflow import _stats
        monkeypatch.setattr(_stats, "FRAME_RECORDS", records)
    for max_frames in (21, 3):
        want = overflow_models.run_twice(du.DebugUnderflowOverflow, fault, max_frames_to_save=max_frames)
        assert overflow_models.run_twice(overflow.DebugUnderflowOverflow, fault, max_frames_to_save=max_frames) == want
        assert overflow_models.run_twice(lambda m, **kw: overflow.DebugUnderflowOverflow(m, deferred=True, **kw),
                                         fault, max_frames_to_save=max_frames) == want


def tiny_t5(dtype):
    transformers.set_seed(0)
    cfg = transformers.T5Config(vocab_size=64, d_model=16, d_kv=4, d_ff=32, num_layers=2, num_heads=2)
    return transformers.T5ForConditionalGeneration(cfg).to(dtype).eval()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_tiny_t5_report_identical(dtype):
    ids = torch.arange(16).reshape(2, 8) % 64
    texts = []
    for cls in (du.DebugUnderflowOverflow, overflow.DebugUnderflowOverflow,
                lambda m, **kw: overflow.DebugUnderflowOverflow(m, deferred=True, **kw)):
        model = tiny_t5(dtype)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), torch.no_grad():
            cls(model, trace_batch_nums=[1])
            for _ in range(2):
                model(input_ids=ids, decoder_input_ids=ids)
            with torch.no_grad():
                model.decoder.block[1].layer[0].SelfAttention.o.weight[0, 0] = float("inf")
            try:
                model(input_ids=ids, decoder_input_ids=ids)
            except ValueError as e:
                print("ValueError:", e)
        texts.append(out.getvalue())
    assert "Detected inf/nan during batch_number=2" in texts[0]
    assert texts[1] == texts[0] and texts[2] == texts[0]


CASES = {
    "bool": lambda: torch.tensor([True, False]),
    "int": lambda: torch.tensor([3, -7]),
    "empty": lambda: torch.empty(0),
    "complex_inf": lambda: torch.tensor([1 + 1j, complex(float("inf"), 0)]),
    "sparse_inf": lambda: torch.sparse_coo_tensor([[0, 3]], [1.0, float("inf")], (5,)),
    "sparse_nan": lambda: torch.sparse_coo_tensor([[0, 3]], [float("nan"), 2.0], (5,)),
    "sparse_finite": lambda: torch.sparse_coo_tensor([[0, 3]], [1.0, 2.0], (5,)),
    "fp16_both": lambda: torch.tensor([float("nan"), float("-inf"), 1.0], dtype=torch.float16),
    "bf16_inf": lambda: torch.tensor([float("inf"), 1.0], dtype=torch.bfloat16),
    "f64_finite": lambda: torch.tensor([1e300, 1e-310], dtype=torch.float64),
    "noncontiguous_nan": lambda: torch.tensor([[1.0, float("nan")], [2.0, 3.0]]).t(),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_detect_overflow_same_answer_as_transformers(case):
    want = printed(du.detect_overflow, CASES[case](), case)
    got = printed(overflow.detect_overflow, CASES[case](), case)
    assert not isinstance(want[0], Exception)
    assert got == want


# transformers raises; opforge's documented answers (docs/overflow.md)
RAISES = {
    "meta": (lambda: torch.empty(3, device="meta"), (False, "")),
    "float_inf": (lambda: float("inf"), (True, "float_inf has infs\n")),
    "float": (lambda: 2.5, (False, "")),
    "numpy_nan": (lambda: np.array([np.nan, 1.0], dtype=">f4"), (True, "numpy_nan has nans\n")),
}


@pytest.mark.parametrize("case", sorted(RAISES))
def test_detect_overflow_where_transformers_raises(case):
    make, documented = RAISES[case]
    assert isinstance(printed(du.detect_overflow, make(), case)[0], Exception)
    assert printed(overflow.detect_overflow, make(), case) == documented


class Mixed(torch.nn.Module):
    """Inputs of every kind a hook sees: a tensor, a numpy array, None, a number, an int tensor."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)

    def forward(self, x, arr, nothing, number, ints):
        return self.lin(x), (x * 2, None), number


def test_module_inputs_of_every_kind_same_text():
    texts = []
    for cls in (du.DebugUnderflowOverflow, overflow.DebugUnderflowOverflow,
                lambda m, **kw: overflow.DebugUnderflowOverflow(m, deferred=True, **kw)):
        torch.manual_seed(0)
        model = Mixed()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            cls(model, trace_batch_nums=[0])
            model(torch.ones(1, 2), np.array([np.nan, 1.0]), None, 3.5, torch.tensor([-4, 2]))
        texts.append(out.getvalue())
    assert f"{'not a tensor':>17} input[1]\n" in texts[0]
    assert texts[1] == texts[0] and texts[2] == texts[0]
