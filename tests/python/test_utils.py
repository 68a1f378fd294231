"""opforge_ops.utils: flatten / unflatten round trips over numpy arrays and torch CPU tensors."""
import numpy as np
import pytest

from opforge_ops import utils

SHAPES = [(3,), (0,), (2, 5), (1,), (0, 4), (4097,), (7, 3, 2)]


def test_numpy_round_trip_mixed_sizes_and_empty_members():
    rng = np.random.default_rng(0)
    members = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    flat = utils.flatten(members)
    assert flat.ndim == 1 and flat.dtype == np.float32
    np.testing.assert_array_equal(flat, np.concatenate([m.ravel() for m in members]))
    back = utils.unflatten(flat, members)
    assert [b.shape for b in back] == [m.shape for m in members]
    for b, m in zip(back, members):
        np.testing.assert_array_equal(b, m)


def test_torch_round_trip_including_non_contiguous_members():
    torch = pytest.importorskip('torch')
    members = [torch.randn(s) for s in SHAPES] + [torch.randn(4, 6).t()]
    flat = utils.flatten(members)
    torch.testing.assert_close(flat, torch.cat([m.reshape(-1) for m in members]))
    back = utils.unflatten(flat, members)
    for b, m in zip(back, members):
        assert b.shape == m.shape
        torch.testing.assert_close(b, m)


def test_large_total_uses_threads_and_stays_exact():
    members = [np.arange(n, dtype=np.int64) for n in (3_000_000, 0, 17, 1_200_001, 0)]
    flat = utils.flatten(members, threads=3)
    back = utils.unflatten(flat, members, threads=3)
    for b, m in zip(back, members):
        np.testing.assert_array_equal(b, m)


def test_unflatten_into_existing_buffers():
    flat = np.arange(10, dtype=np.float64)
    outs = [np.zeros(4), np.zeros(0), np.zeros(6)]
    utils.unflatten_into(flat, outs)
    np.testing.assert_array_equal(np.concatenate(outs), flat)


def test_flatten_into_existing_buffer():
    members = [np.arange(3.0), np.zeros(0), np.arange(5.0)]
    out = np.full(9, -1.0)
    utils.flatten_into(members, out)
    np.testing.assert_array_equal(out, [0, 1, 2, 0, 1, 2, 3, 4, -1])
    with pytest.raises(ValueError, match='out has 8 bytes'):
        utils.flatten_into(members, np.zeros(1))


def test_mixed_dtypes_and_short_flat_are_errors():
    with pytest.raises(TypeError, match='one dtype'):
        utils.flatten([np.zeros(2, np.float32), np.zeros(2, np.float64)])
    with pytest.raises(ValueError, match='flat buffer has 8 bytes, the members need 16'):
        utils.unflatten_into(np.zeros(1), [np.zeros(2)])
