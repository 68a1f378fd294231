"""Drop-in DebugUnderflowOverflow: transformers' report text, statistics from one native call per frame.

The hook keeps only numbers per frame (raw statistics records, labels, the module's precomputed
header); a frame's text is built only when it is printed (a trace or a dump), which is rare, so the
per-hook cost is the statistics call and a little bookkeeping."""
from __future__ import annotations

import collections
import ctypes
import importlib.util
import logging
import math
import os
import sys
from typing import IO, Any, Callable, Literal, MutableSequence, NoReturn, Sequence, Tuple, Union

from .. import _native
from .._buffers import is_numpy_array, is_torch_tensor
from . import _lib, _stats
from ._stats import Raw, abs_min_max

Item = Union[str, Tuple[str]]  # a tensor's label, or the whole line of a None / a non-tensor

# Printed instead of the abs-min/abs-max pair where transformers itself crashes (empty tensors) or
# cannot read data (tensors without storage, e.g. ZeRO-3 partitioned placeholders on "meta").
EMPTY_LABEL = "empty"
NO_STORAGE_LABEL = "no storage"

_P17 = " " * 17

# A frame's items: the label (str) of a tensor, or a 1-tuple holding the whole line of a None or a
# non-tensor. Those for the first _NCTX positions are made once: the hook names every item of every call.
_NCTX = 64
_BIG_PARAM = 1 << 16  # parameters this large have their statistics reused within a batch
# Deferred frames wait for the root module's end, a full frame buffer (_stats.FRAME_RECORDS), or
# until this many are pending (a bound on the memory held when the root module never runs).
_MAX_PENDING = 4096


def _lit(kind: str, ctx: str) -> tuple[str]:
    return (f"{kind:>17} {ctx}",)


_IN = [f"input[{i}]" for i in range(_NCTX)]
_OUT = [f"output[{i}]" for i in range(_NCTX)]
_IN_LIT = [(_lit("None", c), _lit("not a tensor", c)) for c in _IN]
_OUT_LIT = [(_lit("None", c), _lit("not a tensor", c)) for c in _OUT]
_INPUT_LIT = (_lit("None", "input"), _lit("not a tensor", "input"))
_OUTPUT_LIT = (_lit("None", "output"), _lit("not a tensor", "output"))


EXTENSION_FILE = "_overflow_hooks.abi3.so"


def load_extension() -> Any:
    """The compiled steady-state hook (src/kernels/overflow/hooks.c, in the wheel's _lib/ next to the
    library), or None when it is absent, does not load, or was compiled with other constants
    (NCTX, RECORD_SIZE): the Python hook then does all the work, with the same report."""
    for d in _native.lib_dirs():
        path = os.path.join(d, EXTENSION_FILE)
        if not os.path.isfile(path):
            continue
        try:
            spec = importlib.util.spec_from_file_location("_overflow_hooks", path)
            if spec is None or spec.loader is None:
                return None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except (ImportError, OSError):
            return None
        # The constants the C code was compiled with must be this module's: a stale or foreign
        # build would read past the labels or the records.
        if (getattr(module, "NCTX", None) != _NCTX
                or getattr(module, "RECORD_SIZE", None) != _stats._STATS_SIZE):
            return None
        return module
    return None


_EXTENSION: Any = load_extension()


def _no_library(*args: object) -> int:
    """Stands for the native call when there is no library (its frames never reach the call)."""
    return 1


def _torch() -> Any:
    import torch
    return torch


_DENSE: dict[tuple[Any, Any], bool] = {}  # (shape, strides) -> _dense's answer (T5 passes one layout everywhere)


def _dense(t: Any) -> bool:
    """True when t's elements fill [data_ptr, data_ptr + numel) in some order (a permuted view of a
    contiguous tensor, e.g. T5's position bias): the statistics do not depend on the order, so that
    memory is read as is instead of a contiguous copy."""
    key = (t.shape, t.stride())
    known = _DENSE.get(key)
    if known is not None:
        return known
    expect = 1
    dense = True
    for stride, size in sorted(zip(key[1], key[0])):
        if size != 1:
            if stride != expect:
                dense = False
                break
            expect *= size
    if len(_DENSE) >= 4096:
        _DENSE.clear()
    _DENSE[key] = dense
    return dense


class _Result:
    """A tensor line's source when it does not come from a raw statistics record: a label, or the
    abs-min/abs-max computed by torch (dtypes the library does not read), and the nan/inf flags."""
    __slots__ = ("label", "abs_min", "abs_max", "has_nan", "has_inf", "stats")

    def __init__(self, label: str | None = None, abs_min: Any = None, abs_max: Any = None,
                 has_nan: bool = False, has_inf: bool = False,
                 stats: _stats.TensorStats | None = None) -> None:
        self.label, self.abs_min, self.abs_max = label, abs_min, abs_max
        self.has_nan, self.has_inf, self.stats = has_nan, has_inf, stats


_NO_STORAGE = _Result(NO_STORAGE_LABEL)
_EMPTY = _Result(EMPTY_LABEL)


def _dense_result(d: Any, torch: Any) -> _Result:
    """transformers' own computation (abs().min()/max(), isnan/isinf) on a dense tensor; bool tensors,
    which torch's abs() rejects, are read as 0/1."""
    if d.dtype == torch.bool:
        d = d.to(torch.uint8)
    a = d.abs()
    if not (d.is_floating_point() or d.is_complex()):  # integers: no nan or inf to look for
        mn, mx = torch.aminmax(a)  # one pass: the values of min() and max()
        return _Result(None, mn.item(), mx.item())
    return _Result(None, a.min().item(), a.max().item(), bool(torch.isnan(d).any().item()),
                   bool(torch.isinf(d).any().item()))


def _torch_result(t: Any, torch: Any) -> _Result:
    """The line of a tensor the library does not read: storage-less, empty, sparse, bool, integer,
    complex, or on a device other than CPU/CUDA."""
    if t.is_meta:
        return _NO_STORAGE
    if t.numel() == 0:
        return _EMPTY
    if t.layout == torch.sparse_coo:
        # Only the stored values can be nan/inf; unstored elements are zeros.
        v = t.coalesce().values()
        if v.numel() == 0:
            return _Result(None, 0, 0)
        r = _fallback(v)
        if v.numel() < t.numel() and not r.has_nan:
            r.abs_min = 0.0
        return r
    if t.layout != torch.strided:
        t = t.to_dense()
    return _dense_result(t, torch)


def _fallback(var: Any) -> _Result:
    """A _Result computed with one native call, or where the library cannot read `var`, with torch
    (or numpy) operations."""
    if is_torch_tensor(var):
        torch = _torch()
        if var.is_meta:
            return _NO_STORAGE
        if var.numel() == 0:
            return _EMPTY
        if _stats.supported(var) and var.device.type in ("cpu", "cuda"):
            try:
                return _from_raw(_stats.raw_many([var])[0])
            except _lib.OverflowLibError:
                return _dense_result(var, torch)
        return _torch_result(var, torch)
    import numpy as np
    a = _stats.native_array(var)
    if a is None:
        a = np.asarray(var)
    if a.size == 0:
        return _EMPTY
    if a.size and _stats.native_array(a) is not None:
        try:
            return _from_raw(_stats.raw_many([a])[0])
        except _lib.OverflowLibError:
            pass
    b = np.abs(a)
    return _Result(None, b.min(), b.max(), bool(np.isnan(a).any()), bool(np.isinf(a).any()))


def _from_raw(r: Raw) -> _Result:
    mn, mx = abs_min_max(r)
    return _Result(None, mn, mx, r[1] > 0, (r[2] + r[3]) > 0, _stats.TensorStats(r))


def analyse(tensors: Sequence[Any]) -> list[_Result]:
    """_Result for each tensor (torch tensors or numpy arrays)."""
    return [_fallback(t) for t in tensors]


def _flags(r: Any) -> tuple[bool, bool]:
    """(has_nan, has_inf) of a raw record (Raw) or a _Result."""
    if r.__class__ is tuple:
        return r[1] > 0, (r[2] + r[3]) > 0
    return r.has_nan, r.has_inf


def _line(r: Any, ctx: str, extended: bool) -> str:
    """The report line of a raw record (Raw) or a _Result."""
    if r.__class__ is tuple:
        mn, mx = abs_min_max(r)
        line = f"{mn:8.2e} {mx:8.2e} {ctx}"
        if extended:
            line += (f" [zeros={r[4]} subnormal={r[5]} near_overflow={r[6]} nan={r[1]}"
                     f" inf={r[2] + r[3]}]")
        return line
    if r.label is not None:
        return f"{r.label:>17} {ctx}"
    line = f"{r.abs_min:8.2e} {r.abs_max:8.2e} {ctx}"
    if extended and r.stats is not None:
        s = r.stats
        line += f" [zeros={s.zero} subnormal={s.subnormal} near_overflow={s.over} nan={s.nan} inf={s.inf}]"
    return line


class _Frame(tuple):
    """One saved module call: (before, header, items, records, extended). before: the lines pending
    before it (a batch start), or (); items: see _lit; records: the native records of its tensors
    as bytes or bytearray (80 each), or a list with one raw record (Raw) or _Result per tensor. str() is the
    frame text transformers would have saved. A tuple: the hook makes one per module call."""
    __slots__ = ()

    def tensor_results(self) -> list[Any]:
        recs = self[3]
        if recs.__class__ is not list:
            v = _stats._unpacker(len(recs) // 80).unpack(recs)
            return [v[j:j + 10] for j in range(0, len(v), 10)]
        return recs

    def __str__(self) -> str:
        before, header, items, _, extended = self
        lines = list(before)
        lines.append(header)
        results = iter(self.tensor_results())
        for item in items:
            if item.__class__ is str:
                lines.append(_line(next(results), item, extended))
            else:
                lines.append(item[0])
        return "\n".join(lines)

    def flagged(self) -> list[tuple[str, bool, bool]]:
        """(ctx, has_nan, has_inf) of each tensor with a nan or an inf."""
        out = []
        results = iter(self.tensor_results())
        for item in self[2]:
            if item.__class__ is str:
                nan, inf = _flags(next(results))
                if nan or inf:
                    out.append((item, nan, inf))
        return out


class _Slot:
    """A tensor's record in a deferred frame buffer, read at the flush (in the frames of tensors the
    library does not read, or of several devices)."""
    __slots__ = ("buffer", "index")

    def __init__(self, buffer: _stats.FrameBuffer, index: int) -> None:
        self.buffer, self.index = buffer, index


class _Lazy:
    """transformers' torch computation on a CUDA tensor the library does not read (integers, bool,
    complex), launched in a deferred frame's hook and made a _Result at the flush: the hook does
    not wait for the GPU."""
    __slots__ = ("parts", "floating")

    def __init__(self, t: Any, torch: Any) -> None:
        if t.dtype == torch.bool:
            t = t.to(torch.uint8)
        a = t.abs()
        self.floating = t.is_floating_point() or t.is_complex()
        self.parts = (a.min(), a.max()) + ((torch.isnan(t).any(), torch.isinf(t).any()) if self.floating else ())

    def result(self) -> _Result:
        v = [p.item() for p in self.parts]
        if not self.floating:
            return _Result(None, v[0], v[1])
        return _Result(None, v[0], v[1], bool(v[2]), bool(v[3]))


# A deferred frame until its flush: [before, header, items, records, batch_number, root, buffer,
# first record, tensor count]; records is None while they wait in `buffer` from `first` on.
_Pending = list


class _Sink:
    """Where report lines go: print(), a logger, or a file (a path is opened on first use and
    closed by close())."""

    def __init__(self, logger: logging.Logger | None = None, file: str | IO[str] | None = None,
                 rank_prefix: str | None = None) -> None:
        self.logger, self.file, self.prefix = logger, file, rank_prefix or ""
        self._fh: IO[str] | None = None

    def __call__(self, text: str) -> None:
        if self.prefix:
            text = "\n".join(self.prefix + line for line in text.split("\n"))
        if self.logger is not None:
            # At INFO when the logger shows INFO; otherwise at WARNING, so that a logger left at
            # logging's default level (WARNING) still gets the report.
            level = logging.INFO if self.logger.isEnabledFor(logging.INFO) else logging.WARNING
            self.logger.log(level, text)
        elif self.file is not None:
            if self._fh is None:
                self._fh = open(self.file, "a") if isinstance(self.file, str) else self.file
            self._fh.write(text + "\n")
            self._fh.flush()
        else:
            print(text)

    def close(self) -> None:
        if self._fh is not None and isinstance(self.file, str):
            self._fh.close()
        self._fh = None


def detect_overflow(var: Any, ctx: str) -> bool:
    """Prints "<ctx> has nans" / "<ctx> has infs" like transformers; True when either is present.

    Beyond transformers (which raises for these): numpy arrays of any byte order are read by value;
    Python floats and ints are checked with math.isnan/isinf; a tensor without storage (meta) has
    nothing to read: False, nothing printed. Anything else raises TypeError, as in transformers."""
    if isinstance(var, (float, int)):
        nan, inf = math.isnan(var), math.isinf(var)
    elif is_torch_tensor(var) or is_numpy_array(var):
        r = _fallback(var)
        nan, inf = r.has_nan, r.has_inf
    else:
        raise TypeError(f"detect_overflow: expected a torch.Tensor, a numpy array or a number, got "
                        f"{type(var).__name__}")
    if nan:
        print(f"{ctx} has nans")
    if inf:
        print(f"{ctx} has infs")
    return nan or inf


def _dist_rank() -> int | None:
    """The rank under an initialised torch.distributed with more than one process, else None."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return dist.get_rank()
    return None


def _file_rank() -> int:
    """The rank that names a file: torch.distributed's when initialised, else $RANK (as set by
    torchrun and most launchers), else 0."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank()
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


class DebugUnderflowOverflow:
    """transformers.debug_utils.DebugUnderflowOverflow with the same report, plus:
    remove() / context manager, logger= or file= output (file may contain "{rank}"), a rank prefix
    under torch.distributed, extended=True (zero/subnormal/near-overflow counts appended to each line),
    deferred=True (statistics read in batches, see docs/overflow.md), and a line of its own for
    empty tensors and tensors without storage."""

    def __init__(self, model: Any, max_frames_to_save: int = 21, trace_batch_nums: list[int] | None = None,
                 abort_after_batch_num: int | None = None, *, logger: logging.Logger | None = None,
                 file: str | IO[str] | None = None, rank_prefix: bool = True, extended: bool = False,
                 deferred: bool = False) -> None:
        self.model = model
        self.trace_batch_nums = trace_batch_nums if trace_batch_nums is not None else []
        self.abort_after_batch_num = abort_after_batch_num
        self.frames: MutableSequence[Any] = collections.deque([], max_frames_to_save)
        self.frame: list[str] = []
        self.batch_number = 0
        self.total_calls = 0
        self.detected_overflow = False
        self.prefix = _P17
        self.extended = extended
        # deferred: each frame's statistics go into a frame buffer of its device (FrameBuffer, on
        # a GPU an asynchronous launch: no wait, no tensor kept alive) and are read when the root
        # module finishes, when a buffer is full or _max_pending frames wait, and on remove().
        # Frames are then replayed in order, so a detection reports the same frame, batch number
        # and dump as the per-frame mode, later.
        self.deferred = deferred
        self._max_pending = _MAX_PENDING
        self._pending: list[_Pending] = []
        self._buffers: dict[int, _stats.FrameBuffer] = {}  # device (-1: the CPU) -> its frame buffer
        if isinstance(file, str) and "{rank}" in file:
            file = file.format(rank=_file_rank())
        rank = _dist_rank()
        prefix = f"[rank{rank}] " if (rank is not None and rank_prefix and file is None) else ""
        self._emit = _Sink(logger, file, prefix)
        self.module_names = {m: name for name, m in self.model.named_modules()}
        torch = _torch()
        self._torch = torch
        self._strided = torch.strided
        self._Tensor = torch.Tensor
        self._Parameter = torch.nn.Parameter
        # Statistics of large CPU parameters, reused within a batch (tied weights such as T5's shared
        # embedding are read by several modules per forward): valid while the parameter's data
        # pointer, size and version counter are unchanged, emptied at every batch end. None until
        # the root module has run once, so nothing is reused where batches are not counted.
        self._param_cache: dict[int, tuple[int, int, int, bytes]] | None = None
        # Descriptors of parameters (id -> (parameter, data pointer, count, dtype code, dtype,
        # device)): they hold while the parameter's data pointer, size and dtype do. Emptied at a batch
        # end when it holds more than the model's parameters: a replaced one is not kept alive long.
        self._param_descs: dict[int, tuple[Any, int, int, int, Any, int]] = {}
        self._steady = False  # see forward_hook
        self._codes = _stats.torch_codes()
        self._cpu_multi: Callable[..., int] = _no_library
        try:
            self._cpu_multi = _stats._cpu_fn()
        except _lib.OverflowLibError:  # no library: every tensor takes transformers' torch computation
            self._codes = {}
        base = torch.nn.Module.named_parameters
        # per module: its header line, whether its own parameters can be read from _parameters
        # (what named_parameters(recurse=False) yields unless a class overrides it), and whether one
        # of them is tied (held by another module too: the only ones _param_cache keeps)
        holders = collections.Counter(id(p) for m in self.module_names for p in m._parameters.values()
                                      if p is not None)
        self._nparams = len(holders)
        self._meta = {m: (f"{self.prefix} {name} {m.__class__.__name__}", type(m).named_parameters is base,
                          any(holders[id(p)] > 1 for p in m._parameters.values() if p is not None))
                      for m, name in self.module_names.items()}
        # the compiled steady-state hook (load_extension), with what it reads: None without it
        self._hooks: Callable[..., bool] | None = None
        self._hooks_ctx = self._extension_context() if _EXTENSION is not None and self._codes else None
        if self._hooks_ctx is not None:
            self._hooks = _EXTENSION.hook
        self._handles: list[Any] = []
        self.model.apply(lambda m: self._handles.append(m.register_forward_hook(self.forward_hook)))

    def _extension_context(self) -> tuple[Any, ...] | None:
        """The context tuple the extension's hook reads (its C_* fields, in order)."""
        torch = self._torch

        def address(fn: Any) -> int | None:  # the C function a ctypes function object calls
            return ctypes.cast(fn, ctypes.c_void_p).value

        cuda_fn = None
        try:
            cuda_fn = address(_stats._cuda_fn())
        except (_lib.OverflowLibError, AttributeError):
            pass
        T = torch.Tensor
        ctx = (self._meta, T, torch.nn.Parameter, self._codes, _IN, _OUT, _IN_LIT, _OUT_LIT, _INPUT_LIT, _OUTPUT_LIT,
               _Frame, address(self._cpu_multi), cuda_fn,
               getattr(torch._C, "_cuda_getCurrentRawStream", None), torch.cuda.current_device,
               T.numel, T.data_ptr, T.is_contiguous, T.stride, T.get_device)
        return ctx if len(ctx) == _EXTENSION.CONTEXT_FIELDS else None

    # hooks that can be removed
    def remove(self) -> None:
        """Removes the hooks, reports pending deferred frames (raising the ValueError of a
        detection, like the hook would) and closes a file opened from a path."""
        try:
            if self._pending:
                self._flush()
        finally:
            for h in self._handles:
                h.remove()
            self._handles = []
            self._emit.close()
            for fb in self._buffers.values():
                fb.close()
            self._buffers = {}

    def __enter__(self) -> DebugUnderflowOverflow:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Literal[False]:
        try:
            self.remove()
        except ValueError:
            if exc_type is None:
                raise
        return False

    def save_frame(self, frame: str | None = None) -> None:
        if frame is not None:
            self.expand_frame(frame)
        self.frames.append("\n".join(self.frame))
        self.frame = []

    def expand_frame(self, line: str) -> None:
        self.frame.append(line)

    def trace_frames(self) -> None:
        self._emit("\n".join(map(str, self.frames)))
        self.frames = []

    def reset_saved_frames(self) -> None:
        self.frames = []

    def dump_saved_frames(self) -> None:
        self._emit(f"\nDetected inf/nan during batch_number={self.batch_number}")
        self._emit(f"Last {len(self.frames)} forward frames:")
        self._emit(f"{'abs min':8} {'abs max':8} metadata")
        self._emit("\n".join(map(str, self.frames)))
        self._emit("\n\n")
        self.frames = []

    def batch_start_frame(self) -> None:
        self.expand_frame(f"\n\n{self.prefix} *** Starting batch number={self.batch_number} ***")
        self.expand_frame(f"{'abs min':8} {'abs max':8} metadata")

    def _label(self, module: Any, input: Any, output: Any) -> tuple[str, list[Item], list[Any], int, bool]:
        """Labelling: the header of a module call, its items (see _lit), its tensors in item order,
        how many of the first ones are its own parameters, and whether one of those is tied (held by
        another module too). Runs for every module call."""
        header, fast, tied = self._meta[module]
        Tensor = self._Tensor
        items: list[Item] = []
        tensors: list[Any] = []
        if fast:
            params = module._parameters
            if params:
                for name, p in params.items():
                    if p is not None:
                        items.append(name)
                        tensors.append(p)
                n = len(tensors)
                if n > 1 and (tensors[0] is tensors[1] if n == 2 else len(set(map(id, tensors))) < n):
                    items, tensors = [], []  # a parameter under two names: named_parameters() yields it once
                    for name, p in module.named_parameters(recurse=False):
                        items.append(name)
                        tensors.append(p)
        else:
            for name, p in module.named_parameters(recurse=False):
                items.append(name)
                tensors.append(p)
        nown = len(tensors)
        if input.__class__ is tuple and len(input) == 1 and isinstance(input[0], Tensor):  # the usual call
            items.append("input[0]")
            tensors.append(input[0])
        elif isinstance(input, tuple):
            for i, x in enumerate(input):
                if isinstance(x, Tensor):
                    items.append(_IN[i] if i < _NCTX else f"input[{i}]")
                    tensors.append(x)
                elif i < _NCTX:
                    items.append(_IN_LIT[i][x is not None])
                else:
                    items.append(_lit("None" if x is None else "not a tensor", f"input[{i}]"))
        elif isinstance(input, Tensor):
            items.append("input")
            tensors.append(input)
        else:
            items.append(_INPUT_LIT[input is not None])
        if isinstance(output, Tensor):
            items.append("output")
            tensors.append(output)
        elif isinstance(output, tuple):
            for i, x in enumerate(output):
                if isinstance(x, Tensor):
                    items.append(_OUT[i] if i < _NCTX else f"output[{i}]")
                    tensors.append(x)
                elif isinstance(x, tuple):
                    for j, y in enumerate(x):
                        if isinstance(y, Tensor):
                            items.append(f"output[{i}][{j}]")
                            tensors.append(y)
                        else:
                            items.append(_lit("None" if y is None else "not a tensor", f"output[{i}][{j}]"))
                elif i < _NCTX:
                    items.append(_OUT_LIT[i][x is not None])
                else:
                    items.append(_lit("None" if x is None else "not a tensor", f"output[{i}]"))
        else:
            items.append(_OUTPUT_LIT[output is not None])
        return header, items, tensors, nown, tied

    def _pack(self, scratch: Any, tensors: list[Any], nown: int, cache: dict[int, tuple[int, int, int, bytes]] | None
              ) -> tuple[int, list[tuple[int, bytes]] | None, list[tuple[int, int, int, int, int]] | None,
                         list[Any] | None] | None:
        """Packing: the descriptors of a frame's tensors (threshold 0: the default) into the scratch,
        for one native call.
        The first `nown` tensors are the module's own parameters: their descriptors are remembered
        (_param_descs; a parameter made non-contiguous in place keeps the same memory, and so the same
        statistics). (device, hits, big, keep): device -1 for the CPU, else a CUDA index; hits and
        big, the large parameters whose records `cache` knows / is to learn (__init__; None: none
        of them is tied, or the frame is deferred); keep, contiguous copies
        that must live until the call. None when the frame is not the common case (a dtype or layout
        the library does not read, an empty tensor, two devices): _collect_mixed then."""
        k = len(tensors)
        if k > scratch.cap:
            scratch.grow(k)
        codes, descs = self._codes, self._param_descs
        keep: list[Any] | None = None
        hits: list[tuple[int, bytes]] | None = None
        big: list[tuple[int, int, int, int, int]] | None = None
        args: list[int] = []  # (data, count, dtype) per tensor: one struct call packs them all
        where, i = None, -1
        try:
            for t in tensors:
                i += 1
                if i < nown:  # a parameter: its descriptor holds while its data pointer, size and dtype do
                    d = descs.get(id(t))
                    if d is not None and d[0] is t and d[4] is t.dtype and d[1] == t.data_ptr() and (
                            d[2] == t.numel() and (cache is None or d[2] < _BIG_PARAM)):
                        if d[5] != where:
                            if where is not None:
                                return None
                            where = d[5]
                        args += (d[1], d[2], d[3])
                        continue
                code = codes.get(t.dtype)
                if code is None:
                    return None
                if t.is_cpu:
                    w = -1
                elif t.is_cuda:
                    w = t.get_device()
                else:
                    return None
                if w != where:
                    if where is not None:
                        return None
                    where = w
                n = t.numel()
                if not n:
                    return None
                if i < nown and n >= _BIG_PARAM and cache is not None:  # a tied parameter
                    ptr, version = t.data_ptr(), t._version
                    e = cache.get(id(t))
                    if e is not None and e[0] == ptr and e[1] == version and e[2] == n:
                        if hits is None:
                            hits = []
                        hits.append((i, e[3]))
                        args += (0, 0, code)  # nothing to read: the record is known
                        continue
                    if big is None:
                        big = []
                    big.append((i, id(t), ptr, version, n))
                if not t.is_contiguous() and not _dense(t):
                    t = t.contiguous()
                    if keep is None:
                        keep = []
                    keep.append(t)
                elif i < nown:
                    descs[id(t)] = (t, t.data_ptr(), n, code, t.dtype, where)
                args += (t.data_ptr(), n, code)
        except RuntimeError:  # a layout without strides or storage (sparse, mkldnn): no data pointer
            return None
        _stats.desc_struct(k).pack_into(scratch.desc, 0, *args)
        return where, hits, big, keep  # type: ignore[return-value]

    def _take_before(self) -> list[str] | tuple[()]:
        """The lines pending for the next frame (a batch start), now that it is made."""
        before = self.frame
        if not before:
            return ()
        self.frame = []
        return before

    def _collect(self, module: Any, input: Any, output: Any) -> tuple[_Frame, bool]:
        """The frame of one module call with its statistics read now, and whether it holds a nan/inf.
        CPU tensors are read in one native call, a GPU's in one synchronous read; only their
        nan/+inf/-inf counters are looked at now, the rest when the frame is printed."""
        header, items, tensors, nown, tied = self._label(module, input, output)
        before: list[str] | tuple[()] = self.frame
        if before:
            self.frame = []
        else:
            before = ()
        k = len(tensors)
        if not k:
            return _Frame((before, header, items, b"", self.extended)), False
        scratch = _stats._scratch
        packed = self._pack(scratch, tensors, nown, self._param_cache if tied else None)
        if packed is not None:
            where, hits, big, keep = packed
            if where == -1:
                rc = self._cpu_multi(scratch.desc_addr, k, scratch.out_addr)
            else:
                rc = _stats.cuda_read(where, scratch.desc_addr, k, scratch.out_addr)
            del keep  # the copies read by the call
            if not rc:
                if hits is None and big is None:
                    vals = scratch.out_bytes[:80 * k]  # a copy: the frame's own
                else:
                    vals = self._splice(scratch, k, hits, big)
                return (_Frame((before, header, items, vals, self.extended)),
                        any(_stats._flag_unpacker(k).unpack(vals)))
        records, found = self._collect_mixed(tensors, False)
        return _Frame((before, header, items, records, self.extended)), bool(found)

    def _splice(self, scratch: Any, k: int, hits: list[tuple[int, bytes]] | None,
                big: list[tuple[int, int, int, int, int]] | None) -> bytearray:
        """The records of a frame with large parameters: known ones put in, new ones remembered."""
        buf = bytearray(scratch.out_view[:80 * k])
        for slot, rec in hits or ():
            buf[80 * slot:80 * slot + 80] = rec
        for slot, key, ptr, version, n in big or ():
            self._param_cache[key] = (ptr, version, n, bytes(buf[80 * slot:80 * slot + 80]))  # type: ignore[index]
        return buf

    def _buffer(self, device: int) -> _stats.FrameBuffer:
        fb = self._buffers.get(device)
        if fb is None:
            fb = self._buffers[device] = _stats.FrameBuffer(device, _stats.FRAME_RECORDS, self._cpu_multi)
        return fb

    def _collect_mixed(self, tensors: list[Any], defer: bool) -> tuple[list[Any], bool | None]:
        """The records of a frame with tensors the library does not read, tensors on several devices,
        or no library: one raw record, _Result (or, deferred: _Slot, _Lazy) per tensor, and whether
        one holds a nan/inf (None when deferred: not known before the flush)."""
        k = len(tensors)
        results: list[Any] = [None] * k
        codes, strided, torch = self._codes, self._strided, self._torch
        cpu_idx: list[int] = []
        cuda: dict[int, list[int]] | None = None
        for i, t in enumerate(tensors):
            if t.dtype in codes and t.layout is strided and t.numel():
                if t.is_cpu:
                    cpu_idx.append(i)
                    continue
                if t.is_cuda:
                    if cuda is None:
                        cuda = {}
                    cuda.setdefault(t.get_device(), []).append(i)
                    continue
            if defer and t.is_cuda and t.layout is strided and t.numel():
                results[i] = _Lazy(t, torch)  # launched now, read at the flush
            else:
                results[i] = _torch_result(t, torch)
        groups: list[tuple[int, list[int]]] = [(-1, cpu_idx)] if cpu_idx else []
        if cuda:
            groups += cuda.items()
        if defer and cuda and any(len(idx) > self._buffer(d).capacity - self._buffer(d).used
                                  for d, idx in cuda.items()):
            self._flush()  # before any of this frame's records go in: a flush empties every buffer
        scratch = _stats._scratch
        for device, idx in groups:
            ts = [tensors[i] for i in idx]
            got: list[Any] | None = None
            packed = self._pack(scratch, ts, 0, None)  # one device, dtypes the library reads: not None
            if packed is not None and self._codes:
                n = len(ts)
                if defer and device >= 0 and n <= self._buffer(device).capacity:
                    fb = self._buffer(device)
                    first = fb.add(scratch.desc_addr, n)
                    if first >= 0:
                        got = [_Slot(fb, first + j) for j in range(n)]
                else:
                    try:
                        rc = (self._cpu_multi(scratch.desc_addr, n, scratch.out_addr) if device < 0 else
                              _stats.cuda_read(device, scratch.desc_addr, n, scratch.out_addr))
                    except _lib.OverflowLibError:
                        rc = 1
                    if not rc:
                        v = _stats._unpacker(n).unpack_from(scratch.out_bytes)
                        got = [v[j:j + 10] for j in range(0, 10 * n, 10)]
            packed = None
            if got is None:
                got = [_dense_result(t, torch) for t in ts]
            for i, r in zip(idx, got):
                results[i] = r
        if defer:
            return results, None
        return results, any(any(_flags(r)) for r in results)

    def _defer(self, module: Any, input: Any, output: Any, root: bool) -> None:
        """Deferred mode's hook: the frame goes to _pending, its statistics into the frame buffer of
        its device (on a GPU an asynchronous launch); a full buffer is flushed first. Nothing here
        waits for the GPU, except a tensor without a native read and no storage to launch on."""
        header, items, tensors, nown, _ = self._label(module, input, output)
        before = self._take_before()
        k = len(tensors)
        entry: _Pending = [before, header, items, None, self.batch_number, root, None, 0, k]
        if not k:
            entry[3] = b""
        else:
            scratch = _stats._scratch
            packed = self._pack(scratch, tensors, nown, None)
            if packed is not None:
                fb = self._buffers.get(packed[0]) or self._buffer(packed[0])
                if k <= fb.capacity:
                    first = fb.add(scratch.desc_addr, k)
                    if first < 0:
                        self._flush()  # packs nothing: the descriptors are still there
                        first = fb.add(scratch.desc_addr, k)
                    entry[6], entry[7] = fb, first
                else:
                    packed = None
            if packed is None:
                entry[3] = self._collect_mixed(tensors, True)[0]
        self._pending.append(entry)
        if len(self._pending) >= self._max_pending:
            self._flush()

    def _save(self, frame: _Frame, found: bool | None = None) -> bool:
        """Saves a frame whose statistics are read; prints its nan/inf messages. True on a detection."""
        self.frames.append(frame)
        if found is None:
            found = any(nan or inf for _, nan, inf in frame.flagged())
        if found:
            for ctx, nan, inf in frame.flagged():
                if nan:
                    self._emit(f"{ctx} has nans")
                if inf:
                    self._emit(f"{ctx} has infs")
            self.detected_overflow = True
        return found

    def create_frame(self, module: Any, input: Any, output: Any) -> None:
        self._save(*self._collect(module, input, output))

    def _flush(self) -> None:
        """Reads the frame buffers and saves the pending (deferred) frames in order, as the per-frame
        mode would have; at the first detection, dumps the frames saved up to it (the later ones are
        dropped) with its batch number, and raises. Without a nan/inf, only the frames the deque
        keeps are made."""
        pending, self._pending = self._pending, []
        data = {fb: fb.read() for fb in self._buffers.values() if fb.used}
        clean = not any(any(_stats._flag_unpacker(len(d) // 80).unpack(d)) for d in data.values())
        for e in pending:
            recs = e[3]
            if recs.__class__ is list:
                recs = e[3] = [_resolve(r, data) for r in recs]
                if clean and any(any(_flags(r)) for r in recs):
                    clean = False
        ext = self.extended
        if clean:
            maxlen = getattr(self.frames, "maxlen", None)
            keep = pending if maxlen is None or len(pending) <= maxlen else pending[-maxlen:]
            self.frames.extend(_Frame((e[0], e[1], e[2], _records(e, data), ext)) for e in keep)
            return
        for e in pending:
            if self._save(_Frame((e[0], e[1], e[2], _records(e, data), ext))):
                self.batch_number = e[4]
                self.frame = []
                if e[5]:
                    self.batch_start_frame()
                self._raise_detected()

    def _raise_detected(self) -> NoReturn:
        self._steady = False
        self.dump_saved_frames()
        raise ValueError(
            "DebugUnderflowOverflow: inf/nan detected, aborting as there is no point running further. "
            "Please scroll up above this traceback to see the activation values prior to this event."
        )

    def forward_hook(self, module: Any, input: Any, output: Any) -> None:
        # Steady state (not the first call, no trace, nothing detected, and in the per-frame mode
        # nothing pending): a non-root module's frame is saved, or deferred, and nothing else
        # happens unless it holds a nan/inf.
        if self._steady and module is not self.model:
            self.total_calls += 1
            if self._hooks is not None and self._hooks(self, module, input, output):
                return  # the extension did what follows, for a common call
            if self.deferred:
                self._defer(module, input, output, False)
                return
            frame, found = self._collect(module, input, output)
            if not found:
                self.frames.append(frame)
                return
            self._save(frame, True)
            self._raise_detected()
        self._steady = False
        self._forward_hook(module, input, output)
        self._steady = (not self.detected_overflow and (self.deferred or not self._pending)
                        and self.total_calls > 0 and self.batch_number not in self.trace_batch_nums)

    def _forward_hook(self, module: Any, input: Any, output: Any) -> None:
        last_frame_of_batch = False
        trace_mode = self.batch_number in self.trace_batch_nums
        if trace_mode:
            if self._pending:
                self._flush()
            self.reset_saved_frames()
        if self.total_calls == 0:
            self.batch_start_frame()
        self.total_calls += 1
        if module == self.model:
            self.batch_number += 1
            last_frame_of_batch = True
            self._param_cache = {}  # a new batch: parameters may have been updated
            if len(self._param_descs) > self._nparams:
                self._param_descs = {}  # some were replaced: hold the old ones no longer
        if self.deferred and not trace_mode and not self.detected_overflow:
            self._defer(module, input, output, last_frame_of_batch)
            if last_frame_of_batch:
                self.batch_start_frame()
            if last_frame_of_batch and self._pending:
                self._flush()
        else:
            if self._pending:
                self._flush()
            frame, found = self._collect(module, input, output)
            if found:
                self._save(frame, True)
            else:
                self.frames.append(frame)
            if trace_mode:
                self.trace_frames()
            if last_frame_of_batch:
                self.batch_start_frame()
            if self.detected_overflow and not trace_mode:
                self._raise_detected()
        if self.abort_after_batch_num is not None and self.batch_number > self.abort_after_batch_num:
            raise ValueError(
                f"DebugUnderflowOverflow: aborting after {self.batch_number} batches due to"
                f" `abort_after_batch_num={self.abort_after_batch_num}` arg"
            )


def _resolve(r: Any, data: dict[_stats.FrameBuffer, bytes]) -> Any:
    """A deferred frame's entry made final at the flush: a _Slot's raw record, a _Lazy's _Result."""
    if r.__class__ is _Slot:
        return _stats._unpacker(1).unpack_from(data[r.buffer], 80 * r.index)
    if r.__class__ is _Lazy:
        return r.result()
    return r


def _records(e: _Pending, data: dict[_stats.FrameBuffer, bytes]) -> Any:
    """The records of a pending frame once its buffer is read (see _Pending)."""
    if e[3] is not None:
        return e[3]
    first = e[7]
    return data[e[6]][80 * first:80 * (first + e[8])]
