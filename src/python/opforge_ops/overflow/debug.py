"""Drop-in DebugUnderflowOverflow: transformers' report text, statistics from one native call per frame.

The hook keeps only numbers per frame (raw statistics records, labels, the module's precomputed
header); a frame's text is built only when it is printed (a trace or a dump), which is rare, so the
per-hook cost is the statistics call and a little bookkeeping."""
from __future__ import annotations

import collections
import logging
import math
import os
import sys
from typing import IO, Any, Callable, Literal, MutableSequence, NoReturn, Sequence, Tuple, Union

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
# Deferred frames wait for the root module's end, or until this many are pending (a bound on the
# memory held when the root module never runs): each flush is a synchronisation, so it stays rare.
_MAX_PENDING = 4096


def _lit(kind: str, ctx: str) -> tuple[str]:
    return (f"{kind:>17} {ctx}",)


_IN = [f"input[{i}]" for i in range(_NCTX)]
_OUT = [f"output[{i}]" for i in range(_NCTX)]
_IN_LIT = [(_lit("None", c), _lit("not a tensor", c)) for c in _IN]
_OUT_LIT = [(_lit("None", c), _lit("not a tensor", c)) for c in _OUT]
_INPUT_LIT = (_lit("None", "input"), _lit("not a tensor", "input"))
_OUTPUT_LIT = (_lit("None", "output"), _lit("not a tensor", "output"))


def _no_library(*args: object) -> int:
    """Stands for the native call when there is no library (its frames never reach the call)."""
    return 1


def _torch() -> Any:
    import torch
    return torch


def _dense(t: Any) -> bool:
    """True when t's elements fill [data_ptr, data_ptr + numel) in some order (a permuted view of a
    contiguous tensor, e.g. T5's position bias): the statistics do not depend on the order, so that
    memory is read as is instead of a contiguous copy."""
    expect = 1
    for stride, size in sorted(zip(t.stride(), t.shape)):
        if size != 1:
            if stride != expect:
                return False
            expect *= size
    return True


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
        return _Result(None, a.min().item(), a.max().item())
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


class _Frame:
    """One module call: the lines pending before it (batch start), its header, its items (see _lit)
    and the statistics of its tensors: `vals`, the native records of all of them as bytes
    (`results` None), or `results`, one raw record, _Result or deferred slot per tensor. str() is
    the frame text transformers would have saved."""
    __slots__ = ("before", "header", "items", "vals", "results", "extended", "batch_number", "root")

    def __init__(self, before: list[str], header: str, items: list[Item], vals: bytes | None,
                 results: list[Any] | None, extended: bool) -> None:
        self.before, self.header, self.items, self.vals = before, header, items, vals
        self.results, self.extended = results, extended
        self.batch_number, self.root = 0, False

    def tensor_results(self) -> list[Any]:
        if self.results is None:
            assert self.vals is not None  # one of the two is set
            v = _stats._unpacker(len(self.vals) // 80).unpack(self.vals)
            return [v[j:j + 10] for j in range(0, len(v), 10)]
        return self.results

    def __str__(self) -> str:
        lines = list(self.before)
        lines.append(self.header)
        results = iter(self.tensor_results())
        extended = self.extended
        for item in self.items:
            if item.__class__ is str:
                lines.append(_line(next(results), item, extended))
            else:
                lines.append(item[0])
        return "\n".join(lines)

    def flagged(self) -> list[tuple[str, bool, bool]]:
        """(ctx, has_nan, has_inf) of each tensor with a nan or an inf."""
        out = []
        results = iter(self.tensor_results())
        for item in self.items:
            if item.__class__ is str:
                nan, inf = _flags(next(results))
                if nan or inf:
                    out.append((item, nan, inf))
        return out


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
        # deferred: each frame's statistics are launched at once (asynchronously on the GPU, without
        # keeping the tensors alive) and read together when the root module finishes, when
        # max_frames_to_save frames are pending, and on remove(). Frames are then replayed in order,
        # so a detection reports the same frame, batch number and dump as the per-frame mode, later.
        self.deferred = deferred
        self._max_pending = _MAX_PENDING
        self._pending: list[_Frame] = []
        self._pending_stats = _stats.PendingStats()
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
        self._steady = False  # see forward_hook
        self._codes = _stats.torch_codes()
        self._cpu_multi: Callable[..., int] = _no_library
        try:
            self._cpu_multi = _stats._cpu_fn()
        except _lib.OverflowLibError:  # no library: every tensor takes transformers' torch computation
            self._codes = {}
        base = torch.nn.Module.named_parameters
        # per module: its header line, and whether its own parameters can be read from _parameters
        # (what named_parameters(recurse=False) yields unless a class overrides it)
        self._meta = {m: (f"{self.prefix} {name} {m.__class__.__name__}", type(m).named_parameters is base)
                      for m, name in self.module_names.items()}
        self._handles: list[Any] = []
        self.model.apply(lambda m: self._handles.append(m.register_forward_hook(self.forward_hook)))

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

    def _collect(self, module: Any, input: Any, output: Any,
                 pending: _stats.PendingStats | None) -> tuple[_Frame, bool | None]:
        """The frame of one module call and whether it holds a nan/inf (None when deferred: not known
        yet). The statistics of CPU tensors are read now, in one native call; CUDA tensors go in one
        call per device, read now, or launched into `pending` (deferred) and read later. This runs
        for every module call, so the common case is written out with few calls and allocations."""
        header, fast = self._meta[module]
        Tensor = self._Tensor
        items: list[Item] = []
        tensors: list[Any] = []
        if fast:
            for name, p in module._parameters.items():
                if p is not None:
                    items.append(name)
                    tensors.append(p)
            if len(tensors) > 1 and len(set(map(id, tensors))) < len(tensors):
                items, tensors = [], []  # a parameter under two names: named_parameters() yields it once
                for name, p in module.named_parameters(recurse=False):
                    items.append(name)
                    tensors.append(p)
        else:
            for name, p in module.named_parameters(recurse=False):
                items.append(name)
                tensors.append(p)
        if isinstance(input, tuple):
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
        before, self.frame = self.frame, []

        # The common case: every tensor a non-empty dense tensor of a dtype the library reads, all
        # on the CPU or all on one GPU, packed straight into the descriptors of one native call.
        k = len(tensors)
        scratch = _stats._scratch
        if k > scratch.cap:
            scratch.grow(k)
        desc, codes, strided, pack = scratch.desc, self._codes, self._strided, _stats._DESC.pack_into
        # (deferred frames read every tensor: their records are not known when the hook runs)
        keep: list[Any] | None
        hits: list[tuple[int, bytes]] | None
        big: list[tuple[int, int, int, int, int]] | None
        off, keep, hits, big = 0, None, None, None
        cache = self._param_cache if pending is None else None
        where: Any = None  # -1: the CPU, else a CUDA device index
        for t in tensors:
            code = codes.get(t.dtype)
            if code is None or t.layout is not strided:
                break
            w = -1 if t.is_cpu else (t.get_device() if t.is_cuda else None)
            if w is None or (where is not None and w != where):
                break  # mixed devices: _collect_mixed
            where = w
            n = t.numel()
            if not n:
                break
            if n >= _BIG_PARAM and cache is not None and isinstance(t, self._Parameter):
                ptr, version = t.data_ptr(), t._version
                e = cache.get(id(t))
                if e is not None and e[0] == ptr and e[1] == version and e[2] == n:
                    if hits is None:
                        hits = []
                    hits.append((off // 32, e[3]))
                    pack(desc, off, 0, 0, code, 0, 0.0)  # nothing to read: the record is known
                    off += 32
                    continue
                if big is None:
                    big = []
                big.append((off // 32, id(t), ptr, version, n))
            if not t.is_contiguous() and not _dense(t):
                t = t.contiguous()
                if keep is None:
                    keep = []
                keep.append(t)
            pack(desc, off, t.data_ptr(), n, code, 0, 0.0)
            off += 32
        else:
            if not k:
                return _Frame(before, header, items, b"", None, self.extended), False
            if where == -1:
                rc = self._cpu_multi(scratch.desc_addr, k, scratch.out_addr)
            elif pending is not None:  # deferred: launched now, read at the batch's end
                try:
                    slots = pending.add_packed(where, scratch.desc_addr, k)
                    return _Frame(before, header, items, None, list(slots), self.extended), None
                except _lib.OverflowLibError:
                    rc = 1
            else:
                rc = _stats.cuda_read(where, scratch.desc_addr, k, scratch.out_addr)
            if not rc:
                # only the nan/+inf/-inf counters are read now; the rest when the frame is printed
                if hits is None and big is None:
                    vals = bytes(scratch.out_view[:80 * k])
                else:
                    vals = self._splice(scratch, k, hits, big)
                found = any(_stats._flag_unpacker(k).unpack(vals))
                return _Frame(before, header, items, vals, None, self.extended), found
        keep = None
        return self._collect_mixed(before, header, items, tensors, pending)

    def _splice(self, scratch: Any, k: int, hits: list[tuple[int, bytes]] | None,
                big: list[tuple[int, int, int, int, int]] | None) -> bytes:
        """The records of a frame with large parameters: known ones put in, new ones remembered."""
        buf = bytearray(scratch.out_view[:80 * k])
        for slot, rec in hits or ():
            buf[80 * slot:80 * slot + 80] = rec
        for slot, key, ptr, version, n in big or ():
            self._param_cache[key] = (ptr, version, n, bytes(buf[80 * slot:80 * slot + 80]))  # type: ignore[index]
        return bytes(buf)

    def _collect_mixed(self, before: list[str], header: str, items: list[Item], tensors: list[Any],
                       pending: _stats.PendingStats | None) -> tuple[_Frame, bool | None]:
        """_collect for frames with CUDA tensors, tensors the library does not read, or no library."""
        k = len(tensors)
        results: list[Any] = [None] * k
        codes, strided = self._codes, self._strided
        cpu_idx: list[int] = []
        cuda: dict[Any, list[int]] | None = None
        for i, t in enumerate(tensors):
            if t.dtype in codes and t.layout is strided and t.numel():
                if t.is_cpu:
                    cpu_idx.append(i)
                    continue
                if t.is_cuda:
                    if cuda is None:
                        cuda = {}
                    cuda.setdefault(t.device, []).append(i)
                    continue
            results[i] = _torch_result(t, self._torch)
        groups: list[list[int]] = [cpu_idx] if cpu_idx else []
        if cuda:
            groups += cuda.values()
        found: bool | None = False
        got: list[Any]
        for idx in groups:
            ts = [tensors[i] for i in idx]
            try:
                got = pending.add(ts) if pending is not None and ts[0].is_cuda else _stats.raw_many(ts)
            except _lib.OverflowLibError:
                got = [_dense_result(t, self._torch) for t in ts]
            for i, r in zip(idx, got):
                results[i] = r
        for r in results:
            if r.__class__ is not int and any(_flags(r)):
                found = True
        if pending is not None and cuda:
            found = None
        return _Frame(before, header, items, None, results, self.extended), found

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
        self._save(*self._collect(module, input, output, None))

    def _flush(self) -> None:
        """Reads the statistics of the pending (deferred) frames and saves them in order, as the
        per-frame mode would have; at the first detection, dumps the frames saved up to it (the
        later ones are dropped) with its batch number, and raises."""
        pending, self._pending = self._pending, []
        if len(self._pending_stats):
            raw = self._pending_stats.read_raw()
            for frame in pending:
                if frame.results is not None:
                    frame.results = [raw[r] if r.__class__ is int else r for r in frame.results]
        for frame in pending:
            if self._save(frame):
                self.batch_number = frame.batch_number
                self.frame = []
                if frame.root:
                    self.batch_start_frame()
                self._raise_detected()

    def _raise_detected(self) -> NoReturn:
        self.dump_saved_frames()
        raise ValueError(
            "DebugUnderflowOverflow: inf/nan detected, aborting as there is no point running further. "
            "Please scroll up above this traceback to see the activation values prior to this event."
        )

    def forward_hook(self, module: Any, input: Any, output: Any) -> None:
        # Steady state (not the first call, no trace, no deferral, nothing detected or pending):
        # a non-root module's frame is saved and nothing else happens unless it holds a nan/inf.
        if self._steady and module is not self.model:
            self.total_calls += 1
            frame, found = self._collect(module, input, output, None)
            if not found:
                self.frames.append(frame)
                return
            self._steady = False
            self._save(frame, True)
            self._raise_detected()
        self._steady = False
        self._forward_hook(module, input, output)
        self._steady = (not self.deferred and not self.detected_overflow and not self._pending
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
        if self.deferred and not trace_mode and not self.detected_overflow:
            frame, _ = self._collect(module, input, output, self._pending_stats)
            frame.batch_number, frame.root = self.batch_number, last_frame_of_batch
            self._pending.append(frame)
            if last_frame_of_batch:
                self.batch_start_frame()
            if last_frame_of_batch or len(self._pending) >= self._max_pending:
                self._flush()
        else:
            if self._pending:
                self._flush()
            frame, found = self._collect(module, input, output, None)
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
