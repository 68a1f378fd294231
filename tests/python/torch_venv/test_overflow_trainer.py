"""A real transformers.Trainer with TrainingArguments(debug="underflow_overflow") on a tiny model built
from a config (CPU, no downloads): after opforge_ops.overflow.install() the Trainer constructs
opforge's DebugUnderflowOverflow, and the report of an inf injected at a chosen step is the one
transformers' own class prints, at the same batch. Runs with the PyPI torch environment
(tests/python/torch_venv/pytest.sh)."""
import contextlib
import io
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
import transformers.debug_utils as du  # noqa: E402
import transformers.trainer  # noqa: E402  (imported before install(): its module-level name is rebound)

from opforge_ops import overflow  # noqa: E402

BAD_STEP = 2


class InjectInf(transformers.TrainerCallback):
    """Puts an inf into one weight before the forward of step BAD_STEP."""

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        if state.global_step == BAD_STEP:
            with torch.no_grad():
                model.transformer.h[0].mlp.c_fc.weight[0, 0] = float("inf")


def train(tmp_path, seen):
    transformers.set_seed(0)
    cfg = transformers.GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1, n_head=2)
    model = transformers.GPT2LMHeadModel(cfg)
    data = [{"input_ids": torch.arange(8) % 64 + k, "labels": torch.arange(8) % 64 + k} for k in range(16)]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), debug="underflow_overflow", max_steps=5, per_device_train_batch_size=2,
        use_cpu=True, report_to=[], save_strategy="no", logging_strategy="no", disable_tqdm=True, seed=0,
        dataloader_num_workers=0)
    trainer = transformers.Trainer(model=model, args=args, train_dataset=data, callbacks=[InjectInf()])
    seen.append(transformers.trainer.DebugUnderflowOverflow)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(ValueError, match="inf/nan detected") as e:
        trainer.train()
    return out.getvalue(), e.value


def test_trainer_uses_opforge_after_install(tmp_path):
    original = du.DebugUnderflowOverflow
    seen = []
    want, _ = train(tmp_path / "transformers", seen)
    assert seen[-1] is original
    constructed = []

    class Recording(overflow.DebugUnderflowOverflow):
        def __init__(self, model, *args, **kwargs):
            constructed.append(self)
            super().__init__(model, *args, **kwargs)

    with overflow.install():
        # the class transformers constructs is install()'s; record the instance through a subclass
        assert transformers.trainer.DebugUnderflowOverflow is du.DebugUnderflowOverflow
        assert issubclass(du.DebugUnderflowOverflow, overflow.DebugUnderflowOverflow) or \
            du.DebugUnderflowOverflow is overflow.DebugUnderflowOverflow
        transformers.trainer.DebugUnderflowOverflow = Recording
        try:
            got, _ = train(tmp_path / "opforge", seen)
        finally:
            transformers.trainer.DebugUnderflowOverflow = overflow.DebugUnderflowOverflow
    assert transformers.trainer.DebugUnderflowOverflow is original and du.DebugUnderflowOverflow is original
    assert len(constructed) == 1 and constructed[0].batch_number == BAD_STEP
    assert f"\nDetected inf/nan during batch_number={BAD_STEP}\n" in want
    assert got == want


def test_install_with_defaults_and_uninstall(tmp_path):
    original_cls, original_fn = du.DebugUnderflowOverflow, du.detect_overflow
    seen = []
    overflow.install(deferred=True)
    try:
        assert overflow.installed()
        assert transformers.trainer.DebugUnderflowOverflow is du.DebugUnderflowOverflow
        assert du.detect_overflow is overflow.detect_overflow
        got, _ = train(tmp_path, seen)
        assert issubclass(seen[-1], overflow.DebugUnderflowOverflow)
        assert f"\nDetected inf/nan during batch_number={BAD_STEP}\n" in got
    finally:
        overflow.uninstall()
    assert not overflow.installed()
    assert (du.DebugUnderflowOverflow, du.detect_overflow) == (original_cls, original_fn)
    assert transformers.trainer.DebugUnderflowOverflow is original_cls
    overflow.uninstall()  # a no-op when not installed
