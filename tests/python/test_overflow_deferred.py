"""Deferred mode (statistics into a bounded frame buffer, read once per batch or when it fills)
against the per-frame mode, byte for byte, on CPU tensors: the fault in a batch's first frame, in
its last (the root's), in the second call of a module called twice, with the buffer filled several
times before the fault, and with a short frame history. The per-frame mode is checked against
transformers by the golden files (test_overflow_report.py) and by torch_venv/test_overflow_transformers.py,
which also runs these cases against transformers' own class."""
import contextlib
import io
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
torch = pytest.importorskip("torch", reason="torch is needed for the deferred-mode tests")

import overflow_models  # noqa: E402
from opforge_ops import overflow  # noqa: E402
from opforge_ops.overflow import _lib, _stats  # noqa: E402


def deferred(model, **kw):
    return overflow.DebugUnderflowOverflow(model, deferred=True, **kw)


@pytest.mark.parametrize("fault", overflow_models.TWICE_FAULTS)
@pytest.mark.parametrize("max_frames", [21, 3])
@pytest.mark.parametrize("records", [_stats.FRAME_RECORDS, 8, 4])
def test_deferred_report_is_the_default_report(fault, max_frames, records, monkeypatch):
    want = overflow_models.run_twice(overflow.DebugUnderflowOverflow, fault, max_frames_to_save=max_frames)
    monkeypatch.setattr(_stats, "FRAME_RECORDS", records)
    got = overflow_models.run_twice(deferred, fault, max_frames_to_save=max_frames)
    assert got == want
    # the root's frame comes after its batch is counted, as in transformers
    assert f"Detected inf/nan during batch_number={3 if fault == 'last_frame' else 2}\n" in want
    assert "inf/nan detected" in want


def test_the_fault_is_in_the_frame_the_case_names():
    first = overflow_models.run_twice(overflow.DebugUnderflowOverflow, "first_frame")
    assert first.split("has nans")[0].endswith("input[0] ")
    last = overflow_models.run_twice(overflow.DebugUnderflowOverflow, "last_frame")
    assert "output has infs" in last and last.count("has infs") == 1
    assert "\n" + " " * 17 + "  Twice\n" in last.split("Detected")[1]  # the root's frame is dumped
    twice = overflow_models.run_twice(overflow.DebugUnderflowOverflow, "second_call", max_frames_to_save=2)
    dump = twice.split("Detected")[1]
    assert dump.count(" shared Linear") == 2  # the finite first call, then the faulting second one


def test_buffer_filled_twice_before_the_fault_is_read_each_time(monkeypatch):
    # 8 records; a batch of Twice has 4 + 4 + 4 + 4 + 2 records: the buffer fills twice a batch, so
    # batch 2 reads it twice before its faulting (last) frame is read at the batch end.
    monkeypatch.setattr(_stats, "FRAME_RECORDS", 8)
    reads = []
    real = _stats.FrameBuffer.read

    def counting(self):
        data = real(self)
        reads.append(len(data) // 80)
        return data

    monkeypatch.setattr(_stats.FrameBuffer, "read", counting)
    got = overflow_models.run_twice(deferred, "last_frame")
    assert got == overflow_models.run_twice(overflow.DebugUnderflowOverflow, "last_frame")
    assert reads[:3] == [8, 8, 2]  # batch 0: full, full, the rest at the root's return
    assert len(reads) == 9 and max(reads) <= 8


def test_frame_buffer_on_the_cpu_is_allocated_once_and_refuses_what_does_not_fit():
    fb = _stats.FrameBuffer(-1, 4)
    base = fb._base
    ts = [torch.tensor([1.0, float("inf")]), torch.tensor([float("nan")]), torch.ones(3)]
    s = _stats._scratch
    keep = _stats._describe(ts, 0.0, s.desc)
    assert fb.add(s.desc_addr, 3) == 0 and fb.add(s.desc_addr, 2) == -1 and fb.used == 3
    data = fb.read()
    assert len(data) == 3 * 80 and fb.used == 0 and fb._base == base
    recs = [_stats.TensorStats(_stats._unpacker(1).unpack_from(data, 80 * i)) for i in range(3)]
    assert [(r.count, r.nan, r.posinf) for r in recs] == [(2, 0, 1), (1, 1, 0), (3, 0, 0)]
    assert fb.add(s.desc_addr, 3) == 0  # reused after the read
    del keep


def test_deferred_frames_wait_in_one_buffer_per_device_and_no_tensor_is_kept(monkeypatch):
    monkeypatch.setattr(_stats, "FRAME_RECORDS", 8)
    model = overflow_models.Twice()
    d = deferred(model)
    x, scale = overflow_models.batch(0)
    with torch.no_grad():
        model(x, scale)
        model(x, scale)
    assert list(d._buffers) == [-1] and d._buffers[-1].capacity == 8 and d._pending == []
    fb = d._buffers[-1]
    with torch.no_grad():
        model.first(x)  # the root does not run: the frame waits
    assert len(d._pending) == 1 and fb.used == 4 and d._buffers[-1] is fb
    assert not any(torch.is_tensor(v) for e in d._pending for v in e)
    d.remove()
    assert d._pending == [] and d._buffers == {}


def test_ctypes_layouts_match_the_c_structs():
    # offsets and sizes of opforge_overflow_stats and opforge_overflow_tensor (overflow.h)
    stats = [(n, getattr(_lib.Stats, n).offset) for n, _ in _lib.Stats._fields_]
    assert stats == [("count", 0), ("nan_count", 8), ("posinf_count", 16), ("neginf_count", 24),
                     ("zero_count", 32), ("subnormal_count", 40), ("over_threshold_count", 48),
                     ("reserved", 56), ("abs_min", 64), ("abs_max", 72)]
    desc = [(n, getattr(_lib.TensorDesc, n).offset) for n, _ in _lib.TensorDesc._fields_]
    assert desc == [("data", 0), ("count", 8), ("dtype", 16), ("pad", 20), ("threshold", 24)]
    import ctypes
    assert ctypes.sizeof(_lib.Stats) == 80 and ctypes.sizeof(_lib.TensorDesc) == 32
    # the struct formats the hooks pack and unpack with agree with them
    assert _stats._DESC.size == _stats.desc_struct(1).size == 32 and _stats._unpacker(1).size == 80
    d = _lib.TensorDesc.from_buffer_copy(_stats.desc_struct(1).pack(0x1234, 7, 2))
    assert (d.data, d.count, d.dtype, d.pad, d.threshold) == (0x1234, 7, 2, 0, 0.0)
    flags = _stats._flag_unpacker(1).unpack(bytes(_lib.Stats(1, 2, 3, 4, 5, 6, 7, 8, 9.0, 10.0)))
    assert flags == (2, 3, 4)  # nan, +inf, -inf


@pytest.mark.parametrize("deferred_mode", [False, True])
def test_parameter_replaced_through_data_is_read_anew(deferred_mode):
    # descriptors of parameters are remembered between batches; a new `.data` (new storage, or a
    # shorter view of the same one) must be read as it is now
    model = overflow_models.Twice()
    d = overflow.DebugUnderflowOverflow(model, deferred=deferred_mode)
    x, scale = overflow_models.batch(0)
    with torch.no_grad():
        model(x, scale)
        model(x, scale)
    p = model.first.weight
    assert id(p) in d._param_descs
    view = p.data.reshape(-1)[:6]
    p.data = view  # same data pointer, 6 elements instead of 16
    scratch = _stats._scratch
    assert d._pack(scratch, [p], 1, None) is not None
    assert _stats.desc_struct(1).unpack_from(scratch.desc)[:2] == (view.data_ptr(), 6)
    p.data = torch.full((4, 4), float("inf"))
    with pytest.raises(ValueError, match="inf/nan detected"):  # at the next batch's first frame
        with contextlib.redirect_stdout(io.StringIO()), torch.no_grad():
            model(x, scale)
            d.remove()
