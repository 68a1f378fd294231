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


class Twice(nn.Module):
    """first -> shared -> shared (one module called twice a step) -> last, then the root scales."""

    def __init__(self):
        super().__init__()
        self.first, self.shared, self.last = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)
        _fill(self, 2.0)

    def forward(self, x, scale):
        return self.last(self.shared(self.shared(self.first(x)))) * scale


# Where the fault of run_twice's step `fault_step` is: its first frame (an input), its last frame
# (the root's own output), or the second call of the module called twice (the first stays finite).
TWICE_FAULTS = ("first_frame", "last_frame", "second_call")


def run_twice(cls, fault, steps=4, fault_step=2, **kwargs):
    """Runs Twice with a DebugUnderflowOverflow class and a fault; returns stdout plus the error line."""
    model = Twice()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        d = cls(model, **kwargs)
        try:
            for k in range(steps):
                x, scale = batch(k)
                if k == fault_step:
                    if fault == "first_frame":
                        x[0, 1] = float("nan")
                    elif fault == "last_frame":
                        scale = 1e39  # inf as a float32: only the root's output overflows
                    else:
                        with torch.no_grad():
                            model.shared.weight.mul_(1e20)  # ~1e20 after one call, inf after two
                with torch.no_grad():
                    model(x, scale)
            err = "no error"
        except ValueError as e:
            err = "ValueError: " + str(e)
        if hasattr(d, "remove"):
            d.remove()
    return out.getvalue() + "=== " + err + "\n"
