"""Bus bandwidth as nccl-tests defines it (its doc/PERFORMANCE.md).

algbw = S / t, with S the bytes of the collective (for all_gather: the whole gathered buffer)
and t the time of one call, averaged over the ranks. busbw scales algbw by what each rank's link
must carry so that it is comparable with the hardware's peak whatever the rank count:
all_reduce busbw = algbw * 2(n-1)/n; all_gather busbw = algbw * (n-1)/n.
"""
from __future__ import annotations

ELEMENT_BYTES = 4  # float32


def bus_factor(collective: str, n: int) -> float:
    if collective == 'all_reduce':
        return 2.0 * (n - 1) / n
    if collective == 'all_gather':
        return (n - 1) / n
    raise ValueError(collective)


def algbw_gbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9 if seconds > 0 else 0.0


def busbw_gbps(collective: str, nbytes: int, seconds: float, n: int) -> float:
    return algbw_gbps(nbytes, seconds) * bus_factor(collective, n)


def sizes(min_bytes: int, max_bytes: int, factor: int = 2) -> list[int]:
    """min, min*factor, ... up to max_bytes (as nccl-tests' -b -e -f)."""
    out, s = [], max(ELEMENT_BYTES, min_bytes)
    while s <= max_bytes:
        out.append(s)
        s *= factor
    return out


def all_gather_layout(nbytes: int, n: int) -> int:
    """Elements each rank contributes so that the gathered buffer is about `nbytes` (at least one)."""
    return max(1, nbytes // (ELEMENT_BYTES * n))


def iterations(nbytes: int) -> int:
    """Timed calls for one size: more for small messages (whose time is mostly latency), down to
    2 for the largest so that the sweep stays short. Every rank computes the same number."""
    return max(2, min(20, (64 << 20) // max(nbytes, 1)))


def parse_size(text: str) -> int:
    """'8', '64K', '256M', '1G' (powers of 1024) -> bytes."""
    t = text.strip().upper().removesuffix('B').removesuffix('I')
    mult = {'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}.get(t[-1:], 1)
    digits = t[:-1] if t[-1:] in 'KMG' else t
    if not digits.isdigit() or int(digits) <= 0:
        raise ValueError(f'{text!r} is not a size (expected e.g. 8, 64K, 256M, 1G)')
    return int(digits) * mult


def human(nbytes: int) -> str:
    for unit, size in (('G', 1 << 30), ('M', 1 << 20), ('K', 1 << 10)):
        if nbytes >= size and nbytes % size == 0:
            return f'{nbytes // size}{unit}'
    return str(nbytes)


def pow2_floor(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)
