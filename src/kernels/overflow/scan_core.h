// One GPU thread's share of the statistics scan, written for host and device alike so that the
// host tests run exactly the code the GPU runs (no GPU in CI): the split of a tensor into an
// unaligned head, 16-byte vectors and a ragged tail; the grid-stride walk; the per-element rules.
//
// Speed: H100-class memory feeds ~1.7e12 fp16 elements/s, which leaves the SMs ~10 integer
// instructions per element. So each 16-byte vector first gets only abs, min and max per element;
// when the vector's magnitudes all lie in [smallest normal, threshold] (the common case) nothing is
// zero, subnormal, above the threshold or non-finite, and the counters need no update; when they are
// only below the threshold (zeros: ReLU outputs), only the zero and subnormal counters can move
// (count_low). Otherwise the vector is classified element by element (6 compares, 6 counters).
#pragma once
#include <stdint.h>
#include <string.h>

#include "dtype_traits.h"
#include "overflow.h"

// `#pragma unroll` in device code only (gcc, also in nvcc's host pass, warns about it).
#ifdef __CUDA_ARCH__
#define OVF_UNROLL _Pragma("unroll")
#else
#define OVF_UNROLL
#endif

namespace opforge_overflow {

/// Sign-cleared magnitude bounds of one tensor, in the width the scan computes in (W = uint32_t for
/// formats up to 4 bytes, uint64_t for fp64).
template <class W>
struct ScanParams {
  W abs_mask, last_finite, min_normal, threshold, pinf, ninf;
};

/// Raw counts of a scan; derive() turns them into the reported statistics.
struct RawCounts {
  unsigned long long nonfinite, pinf, ninf, zero, below_normal, above_threshold, mn, mx;
};

OVF_HD inline RawCounts raw_zero() { return {0, 0, 0, 0, 0, 0, ~0ull, 0}; }

OVF_HD inline void raw_add(RawCounts& a, const RawCounts& b) {
  a.nonfinite += b.nonfinite;
  a.pinf += b.pinf;
  a.ninf += b.ninf;
  a.zero += b.zero;
  a.below_normal += b.below_normal;
  a.above_threshold += b.above_threshold;
  a.mn = b.mn < a.mn ? b.mn : a.mn;
  a.mx = b.mx > a.mx ? b.mx : a.mx;
}

/// Final counts from raw ones. The inf patterns are +/-finite_end; formats without inf (e4m3fn)
/// have their NaN there, so their "inf" matches are NaNs. The threshold is a finite magnitude, so
/// every non-finite value is also above it.
struct DerivedCounts {
  unsigned long long nan, posinf, neginf, zero, subnormal, over, finite;
};
OVF_HD inline DerivedCounts derive(const RawCounts& r, unsigned long long count, bool has_inf) {
  const unsigned long long inf = has_inf ? r.pinf + r.ninf : 0;
  return {r.nonfinite - inf,       has_inf ? r.pinf : 0,
          has_inf ? r.ninf : 0,    r.zero,
          r.below_normal - r.zero, r.above_threshold - r.nonfinite,
          count - r.nonfinite};
}

/// Largest finite magnitude pattern whose value is <= t (t <= 0 or NaN: the dtype's max / 2), so
/// "above the threshold" is a pattern comparison. Host only; defined in stats_cpu.cpp.
uint64_t threshold_bits_for(int dtype, double t);

/// The count fields of the ABI's statistics (abs_min/abs_max are the caller's: it knows the layout).
OVF_HD inline void store_counts(const DerivedCounts& d, opforge_overflow_stats* s) {
  s->nan_count = d.nan;
  s->posinf_count = d.posinf;
  s->neginf_count = d.neginf;
  s->zero_count = d.zero;
  s->subnormal_count = d.subnormal;
  s->over_threshold_count = d.over;
}

/// Scan parameters from what the GPU kernel receives per tensor. The inf patterns are
/// +/-finite_end; formats without inf (e4m3fn) have their NaN there (see derive()).
template <class W>
OVF_HD inline ScanParams<W> make_scan_params(int bytes, unsigned long long last_finite, unsigned long long min_normal,
                                             unsigned long long threshold_bits) {
  const W sign = W(W(1) << (8 * bytes - 1));  // every format: the top bit
  const W inf = W(W(last_finite) + 1);
  return {W(sign - 1), W(last_finite), W(min_normal), W(threshold_bits), inf, W(sign | inf)};
}

/// Scan parameters of a layout (threshold_bits from threshold_bits_for()).
template <class W>
inline ScanParams<W> scan_params(const Layout& l, uint64_t threshold_bits) {
  return make_scan_params<W>(l.bytes, l.finite_end() - 1, l.min_normal(), threshold_bits);
}

// Per-thread counters are 32-bit (64-bit adds cost two instructions on the GPU); they are added
// into 64-bit totals at least every kFlushVectors vectors, before they can wrap.
constexpr unsigned long long kFlushVectors = 1ull << 20;  // x 16 elements < 2^32

struct Counts32 {
  uint32_t nonfinite, pinf, ninf, zero, below, above;
};

template <class W>
OVF_HD inline void classify(W x, const ScanParams<W>& q, Counts32& c, W& mn, W& mx) {
  const W a = x & q.abs_mask;
  c.nonfinite += a > q.last_finite;
  c.pinf += x == q.pinf;
  c.ninf += x == q.ninf;
  c.zero += a == 0;
  c.below += a < q.min_normal;
  c.above += a > q.threshold;
  if (a <= q.last_finite) {
    mn = a < mn ? a : mn;
    mx = a > mx ? a : mx;
  }
}

/// 16 bytes as four little-endian words (what one uint4 load gives).
struct Vec16 {
  uint32_t w[4];
};

OVF_HD inline Vec16 load16(const unsigned char* p) {
#ifdef __CUDA_ARCH__
  const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
  return {{v.x, v.y, v.z, v.w}};
#else
  Vec16 v;
  memcpy(&v, p, 16);
  return v;
#endif
}

/// Element k of a vector of B-byte elements, as W.
template <int B, class W>
OVF_HD inline W element(const Vec16& v, int k) {
  if constexpr (B == 8) {
    return W(v.w[2 * k]) | (W(v.w[2 * k + 1]) << 16 << 16);  // W is 64-bit here
  } else {
    constexpr int kPerWord = 4 / B;
    const uint32_t word = v.w[k / kPerWord];
    if constexpr (B == 4) return W(word);
    else return W((word >> (8 * B * (k % kPerWord))) & ((1u << (8 * B)) - 1u));
  }
}

OVF_HD inline uint32_t popcount32(uint32_t x) {
#ifdef __CUDA_ARCH__
  return __popc(x);
#else
  return uint32_t(__builtin_popcount(x));
#endif
}

/// Zero and below-normal counts of a vector whose magnitudes are all finite and not above the
/// threshold: the only counters such a vector can move (ReLU outputs and sparse gradients are
/// full of zeros, so this path is common). 1- and 2-byte formats are counted a word at a time:
/// a lane's magnitude a is below 2^(L-1) (sign cleared), so a + (2^(L-1) - m) has the lane's top
/// bit clear exactly when a < m, and never carries into the next lane.
template <int B, class W>
OVF_HD inline void count_low(const Vec16& v, const ScanParams<W>& q, Counts32& c) {
  if constexpr (B <= 2) {
    constexpr uint32_t lanes = B == 1 ? 0x01010101u : 0x00010001u;
    constexpr uint32_t half = 1u << (8 * B - 1);
    constexpr uint32_t top = lanes * half;
    constexpr uint32_t mask = lanes * (half - 1u);
    constexpr uint32_t k_zero = lanes * (half - 1u);
    const uint32_t k_below = lanes * (half - uint32_t(q.min_normal));
    OVF_UNROLL
    for (int w = 0; w < 4; ++w) {
      const uint32_t a = v.w[w] & mask;
      c.below += popcount32(~(a + k_below) & top);
      c.zero += popcount32(~(a + k_zero) & top);
    }
  } else {
    OVF_UNROLL
    for (int k = 0; k < 16 / B; ++k) {
      const W a = element<B, W>(v, k) & q.abs_mask;
      c.zero += a == 0;
      c.below += a < q.min_normal;
    }
  }
}

template <int B, class W>
OVF_HD inline void scan_vector(const Vec16& v, const ScanParams<W>& q, Counts32& c, W& mn, W& mx) {
  constexpr int kVec = 16 / B;
  W vmin = element<B, W>(v, 0) & q.abs_mask, vmax = vmin;
  OVF_UNROLL
  for (int k = 1; k < kVec; ++k) {
    const W a = element<B, W>(v, k) & q.abs_mask;
    vmin = a < vmin ? a : vmin;
    vmax = a > vmax ? a : vmax;
  }
  if (vmax <= q.threshold) {  // all finite, none above the threshold (the threshold is finite)
    mn = vmin < mn ? vmin : mn;
    mx = vmax > mx ? vmax : mx;
    if (vmin < q.min_normal) count_low<B, W>(v, q, c);
    return;
  }
  OVF_UNROLL
  for (int k = 0; k < kVec; ++k) classify<W>(element<B, W>(v, k), q, c, mn, mx);
}

OVF_HD inline void flush(Counts32& c, RawCounts& r) {
  r.nonfinite += c.nonfinite;
  r.pinf += c.pinf;
  r.ninf += c.ninf;
  r.zero += c.zero;
  r.below_normal += c.below;
  r.above_threshold += c.above;
  c = {0, 0, 0, 0, 0, 0};
}

/// Reads one B-byte element at any alignment.
template <int B, class W>
OVF_HD inline W element_at(const unsigned char* p) {
  if constexpr (B == 1) {
    return W(*p);
  } else {
    W x = 0;
    for (int b = 0; b < B; ++b) x |= W(p[b]) << (8 * b);
    return x;
  }
}

/// The share of thread `begin` (of `stride` threads) of n B-byte elements at data: the elements
/// before the first 16-byte boundary and after the last one singly, the vectors two at a time (two
/// loads in flight per thread). Every element is seen by exactly one thread. A pointer that is not
/// even aligned to the element size is read element by element.
template <int B, class W>
OVF_HD inline RawCounts scan_share(const unsigned char* data, unsigned long long n, unsigned long long begin,
                                   unsigned long long stride, const ScanParams<W>& q) {
  constexpr int kVec = 16 / B;
  Counts32 c = {0, 0, 0, 0, 0, 0};
  RawCounts r = raw_zero();
  W mn = ~W(0), mx = 0;
  const uintptr_t addr = reinterpret_cast<uintptr_t>(data);
  unsigned long long head = ((16 - (addr & 15)) & 15) / B;
  if (addr % B != 0) head = n;  // misaligned element type: no vectors
  if (head > n) head = n;
  const unsigned long long nvec = (n - head) / kVec;
  const unsigned long long tail_begin = head + nvec * kVec;
  for (unsigned long long i = begin; i < head; i += stride) classify<W>(element_at<B, W>(data + i * B), q, c, mn, mx);
  const unsigned char* vec = data + head * B;
  unsigned long long v = begin, since_flush = 0;
  for (; v + stride < nvec; v += 2 * stride) {
    const Vec16 x0 = load16(vec + v * 16);
    const Vec16 x1 = load16(vec + (v + stride) * 16);
    scan_vector<B, W>(x0, q, c, mn, mx);
    scan_vector<B, W>(x1, q, c, mn, mx);
    if ((since_flush += 2) >= kFlushVectors) {
      flush(c, r);
      since_flush = 0;
    }
  }
  if (v < nvec) scan_vector<B, W>(load16(vec + v * 16), q, c, mn, mx);
  for (unsigned long long i = tail_begin + begin; i < n; i += stride)
    classify<W>(element_at<B, W>(data + i * B), q, c, mn, mx);
  flush(c, r);
  r.mn = mn;  // ~0 when this share had no finite value: above every finite magnitude
  r.mx = mx;
  return r;
}

}  // namespace opforge_overflow
