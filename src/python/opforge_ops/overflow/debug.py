"""Drop-in DebugUnderflowOverflow: transformers' report text, statistics from one native call per frame."""
import collections
import sys

from . import _lib
from . import _stats

# Printed instead of the abs-min/abs-max pair where transformers itself crashes (empty tensors) or
# cannot read data (tensors without storage, e.g. ZeRO-3 partitioned placeholders on "meta").
EMPTY_LABEL = "empty"
NO_STORAGE_LABEL = "no storage"


def _torch():
    import torch
    return torch


def _is_tensor(var):
    if "torch" in sys.modules and sys.modules["torch"].is_tensor(var):
        return True
    return type(var).__module__ == "numpy" and type(var).__name__ == "ndarray"


def _has_storage(var):
    return not getattr(var, "is_meta", False)


def _numel(var):
    return var.numel() if hasattr(var, "numel") else var.size


class _Result:
    """What a tensor line needs: the two formatted numbers' sources and the nan/inf flags."""
    __slots__ = ("label", "abs_min", "abs_max", "has_nan", "has_inf", "stats")

    def __init__(self, label=None, abs_min=None, abs_max=None, has_nan=False, has_inf=False, stats=None):
        self.label, self.abs_min, self.abs_max = label, abs_min, abs_max
        self.has_nan, self.has_inf, self.stats = has_nan, has_inf, stats


def _fallback(var):
    """transformers' own computation, for dtypes the library does not read (ints) or no library."""
    if hasattr(var, "data_ptr"):
        torch = _torch()
        a = var.abs()
        return _Result(None, a.min(), a.max(), bool(torch.isnan(var).any().item()),
                       bool(torch.isinf(var).any().item()))
    import numpy as np
    a = np.abs(var)
    return _Result(None, a.min(), a.max(), bool(np.isnan(var).any()), bool(np.isinf(var).any()))


def _prepare(tensors):
    """Results of the tensors the library does not read, and the indices of those it reads."""
    results, native = [None] * len(tensors), []
    for i, v in enumerate(tensors):
        if not _has_storage(v):
            results[i] = _Result(NO_STORAGE_LABEL)
        elif _numel(v) == 0:
            results[i] = _Result(EMPTY_LABEL)
        elif _stats.supported(v):
            native.append(i)
        else:
            results[i] = _fallback(v)
    return results, native


def _from_stats(s):
    return _Result(None, s.abs_min, s.abs_max, s.nan > 0, s.inf > 0, s)


def analyse(tensors):
    """_Result for each tensor; the native ones in one call per device (one synchronisation each)."""
    results, native = _prepare(tensors)
    groups = {}
    for i in native:
        t = tensors[i]  # one call per device: a launch reads one GPU's memory
        groups.setdefault(str(t.device) if getattr(t, "is_cuda", False) else "cpu", []).append(i)
    for idx in groups.values():
        try:
            st = _stats.stats_many([tensors[i] for i in idx])
        except _lib.OverflowLibError:
            for i in idx:
                results[i] = _fallback(tensors[i])
            continue
        for i, s in zip(idx, st):
            results[i] = _from_stats(s)
    return results


def launch(tensors, pending):
    """Like analyse(), but the native statistics are launched into `pending` (a PendingStats) and
    read later: an entry is a _Result, or the slot (int) of pending.read() that holds it."""
    results, native = _prepare(tensors)
    if native:
        try:
            slots = pending.add([tensors[i] for i in native])
        except _lib.OverflowLibError:
            slots = None
        for k, i in enumerate(native):
            results[i] = slots[k] if slots is not None else _fallback(tensors[i])
    return results


class _Sink:
    def __init__(self, logger=None, file=None, rank_prefix=None):
        self.logger, self.file, self.prefix = logger, file, rank_prefix or ""
        self._fh = None

    def __call__(self, text):
        if self.prefix:
            text = "\n".join(self.prefix + line for line in text.split("\n"))
        if self.logger is not None:
            self.logger.info(text)
        elif self.file is not None:
            if self._fh is None:
                self._fh = open(self.file, "a") if isinstance(self.file, str) else self.file
            self._fh.write(text + "\n")
            self._fh.flush()
        else:
            print(text)


def detect_overflow(var, ctx):
    """Prints "<ctx> has nans" / "<ctx> has infs" like transformers; True when either is present."""
    r = analyse([var])[0]
    return _report_flags(r, ctx, print)


def _report_flags(r, ctx, emit):
    if r.has_nan:
        emit(f"{ctx} has nans")
    if r.has_inf:
        emit(f"{ctx} has infs")
    return r.has_nan or r.has_inf


def _dist_rank():
    if "torch" not in sys.modules:
        return None
    dist = sys.modules["torch"].distributed
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return dist.get_rank()
    return None


class DebugUnderflowOverflow:
    """transformers.debug_utils.DebugUnderflowOverflow with the same report, plus:
    remove() / context manager, logger= or file= output (file may contain "{rank}"), a rank prefix
    under torch.distributed, extended=True (zero/subnormal/near-overflow counts appended to each line),
    and a line of its own for empty tensors and tensors without storage."""

    def __init__(self, model, max_frames_to_save=21, trace_batch_nums=None, abort_after_batch_num=None,
                 *, logger=None, file=None, rank_prefix=True, extended=False, deferred=False):
        self.model = model
        self.trace_batch_nums = trace_batch_nums if trace_batch_nums is not None else []
        self.abort_after_batch_num = abort_after_batch_num
        self.frames = collections.deque([], max_frames_to_save)
        self.frame = []
        self.batch_number = 0
        self.total_calls = 0
        self.detected_overflow = False
        self.prefix = "                 "
        self.extended = extended
        # deferred: each frame's statistics are launched at once (asynchronously on the GPU, without
        # keeping the tensors alive) and read together when the root module finishes: one
        # synchronisation per batch. A detection then raises at the end of the batch instead of at
        # the faulting frame. Trace batches are not deferred.
        self.deferred = deferred
        self._pending = []
        self._pending_stats = _stats.PendingStats()
        rank = _dist_rank()
        if isinstance(file, str) and rank is not None:
            file = file.format(rank=rank)
        self._emit = _Sink(logger, file, f"[rank{rank}] " if (rank is not None and rank_prefix and file is None) else "")
        self.module_names = {m: name for name, m in self.model.named_modules()}
        self._handles = []
        self.model.apply(lambda m: self._handles.append(m.register_forward_hook(self.forward_hook)))

    # hooks that can be removed
    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    def save_frame(self, frame=None):
        if frame is not None:
            self.expand_frame(frame)
        self.frames.append("\n".join(self.frame))
        self.frame = []

    def expand_frame(self, line):
        self.frame.append(line)

    def trace_frames(self):
        self._emit("\n".join(self.frames))
        self.frames = []

    def reset_saved_frames(self):
        self.frames = []

    def dump_saved_frames(self):
        self._emit(f"\nDetected inf/nan during batch_number={self.batch_number}")
        self._emit(f"Last {len(self.frames)} forward frames:")
        self._emit(f"{'abs min':8} {'abs max':8} metadata")
        self._emit("\n".join(self.frames))
        self._emit("\n\n")
        self.frames = []

    def batch_start_frame(self):
        self.expand_frame(f"\n\n{self.prefix} *** Starting batch number={self.batch_number} ***")
        self.expand_frame(f"{'abs min':8} {'abs max':8} metadata")

    def _line(self, r, ctx):
        if r.label is not None:
            return f"{r.label:>17} {ctx}"
        line = f"{r.abs_min:8.2e} {r.abs_max:8.2e} {ctx}"
        if self.extended and r.stats is not None:
            s = r.stats
            line += f" [zeros={s.zero} subnormal={s.subnormal} near_overflow={s.over} nan={s.nan} inf={s.inf}]"
        return line

    def _frame_items(self, module, input, output):
        items = [(p, name) for name, p in module.named_parameters(recurse=False)]
        if isinstance(input, tuple):
            items += [(x, f"input[{i}]") for i, x in enumerate(input)]
        else:
            items.append((input, "input"))
        if isinstance(output, tuple):
            for i, x in enumerate(output):
                if isinstance(x, tuple):
                    items += [(y, f"output[{i}][{j}]") for j, y in enumerate(x)]
                else:
                    items.append((x, f"output[{i}]"))
        else:
            items.append((output, "output"))
        return items

    def _frame(self, module, input, output, deferred):
        """(lines before, header, [(kind, ctx)], results) of a frame; kind is "tensor", None or "other".
        The results are read now, or launched into the pending statistics when deferred."""
        header = f"{self.prefix} {self.module_names[module]} {module.__class__.__name__}"
        items = self._frame_items(module, input, output)
        tensors = [v for v, _ in items if _is_tensor(v)]
        results = launch(tensors, self._pending_stats) if deferred else analyse(tensors)
        kinds = [("tensor" if _is_tensor(v) else None if v is None else "other", ctx) for v, ctx in items]
        return self.frame, header, kinds, results

    def create_frame(self, module, input, output):
        self._render([self._frame(module, input, output, deferred=False)])

    def _render(self, frames):
        """Lines and nan/inf messages of frames; slots of deferred results are read here, at once."""
        if any(isinstance(r, int) for *_, results in frames for r in results):
            stats = self._pending_stats.read()
            frames = [(before, header, kinds, [_from_stats(stats[r]) if isinstance(r, int) else r for r in results])
                      for before, header, kinds, results in frames]
        for before, header, kinds, results in frames:
            self.frame = list(before)
            self.expand_frame(header)
            self._render_items(kinds, iter(results))
            self.save_frame()

    def _render_items(self, kinds, results):
        for kind, ctx in kinds:
            if kind == "tensor":
                r = next(results)
                self.expand_frame(self._line(r, ctx))
                if _report_flags(r, ctx, self._emit):
                    self.detected_overflow = True
            elif kind is None:
                self.expand_frame(f"{'None':>17} {ctx}")
            else:
                self.expand_frame(f"{'not a tensor':>17} {ctx}")

    def forward_hook(self, module, input, output):
        last_frame_of_batch = False
        trace_mode = self.batch_number in self.trace_batch_nums
        if trace_mode:
            self.reset_saved_frames()
        if self.total_calls == 0:
            self.batch_start_frame()
        self.total_calls += 1
        if module == self.model:
            self.batch_number += 1
            last_frame_of_batch = True
        if self.deferred and not trace_mode and not last_frame_of_batch:
            self._pending.append(self._frame(module, input, output, deferred=True))
            self.frame = []
            return
        if self._pending:
            pending = self._pending + [self._frame(module, input, output, deferred=True)]
            self._pending = []
            self._render(pending)
        else:
            self.create_frame(module, input, output)
        if trace_mode:
            self.trace_frames()
        if last_frame_of_batch:
            self.batch_start_frame()
        if self.detected_overflow and not trace_mode:
            self.dump_saved_frames()
            raise ValueError(
                "DebugUnderflowOverflow: inf/nan detected, aborting as there is no point running further. "
                "Please scroll up above this traceback to see the activation values prior to this event."
            )
        if self.abort_after_batch_num is not None and self.batch_number > self.abort_after_batch_num:
            raise ValueError(
                f"DebugUnderflowOverflow: aborting after {self.batch_number} batches due to"
                f" `abort_after_batch_num={self.abort_after_batch_num}` arg"
            )
