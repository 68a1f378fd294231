"""Small deterministic models and the scenarios whose reports are kept as golden files.
Weights come from formulas (not torch's RNG) so the numbers do not depend on the torch version."""
import contextlib
import io

import torch
from torch import nn


def _fill(module, start):
    with torch.no_grad():
        for k, p in enumerate(module.parameters()):
            n = p.numel()
            p.copy_((torch.arange(n, dtype=torch.float32) * 0.37 + start + k).sin().reshape(p.shape) * 0.5)
    return module


class Pair(nn.Module):
    """Returns a tuple holding a tensor, a nested tuple (tensor, None) and a non-tensor."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        y = self.lin(x)
        return y, (y * 2, None), 5


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(4, 3)
        self.pair = Pair()
        self.head = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
        _fill(self, 1.0)

    def forward(self, x, scale):
        h = self.embed(x) * scale
        a, (b, _), _ = self.pair(h)
        return self.head(a + b)


def batch(k, kind="finite"):
    x = (torch.arange(8, dtype=torch.float32).reshape(2, 4) * 0.25 - 1.0 + k * 0.1)
    if kind == "nan":
        x[1, 2] = float("nan")
    return x, (2e38 if kind == "inf" else 1.5)


# name -> (constructor kwargs, list of batch kinds to run)
SCENARIOS = {
    "finite_trace": (dict(trace_batch_nums=[0, 1, 2]), ["finite"] * 3),
    "inf": (dict(), ["finite", "finite", "inf", "finite"]),
    "inf_short": (dict(max_frames_to_save=3), ["finite", "finite", "inf"]),
    "nan": (dict(), ["finite", "nan"]),
    "trace_1_3": (dict(trace_batch_nums=[1, 3]), ["finite"] * 5),
    "abort_after": (dict(abort_after_batch_num=1), ["finite"] * 4),
    "trace_then_inf": (dict(trace_batch_nums=[1]), ["finite", "inf", "inf"]),
}


def run(cls, name, device="cpu"):
    """Runs a scenario with a DebugUnderflowOverflow class; returns stdout plus the error line."""
    kwargs, kinds = SCENARIOS[name]
    model = Model().to(device)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cls(model, **kwargs)
        try:
            for k, kind in enumerate(kinds):
                x, scale = batch(k, kind)
                model(x.to(device), scale)
            err = "no error"
        except ValueError as e:
            err = "ValueError: " + str(e)
    return out.getvalue() + "=== " + err + "\n"
