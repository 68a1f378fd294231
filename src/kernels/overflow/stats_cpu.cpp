// CPU statistics: the oracle for the GPU path and the implementation for host tensors.
// One pass over memory; the body is compiled twice (generic and AVX2) and chosen at run time.
// The scan loops must vectorise whatever -O level the build uses (-O2 only vectorises very cheap loops).
#pragma GCC optimize("O3")
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>

#include "dtype_traits.h"
#include "overflow.h"
#include "scan_core.h"

namespace opforge_overflow {
namespace {

thread_local std::string g_last_error;

int fail(int code, std::string message) {
  g_last_error = std::move(message);
  return code;
}

/// Value of a finite, non-negative magnitude bit pattern.
double magnitude_value(const Layout& l, uint64_t a) {
  const uint64_t m = a & ((uint64_t(1) << l.mant_bits) - 1);
  const int e = int(a >> l.mant_bits);
  if (e == 0) return std::ldexp(double(m), 1 - l.bias() - l.mant_bits);
  return std::ldexp(double((uint64_t(1) << l.mant_bits) + m), e - l.bias() - l.mant_bits);
}

/// Largest finite magnitude pattern whose value is <= t (so "over" is a > result).
uint64_t threshold_bits(const Layout& l, double t) {
  uint64_t lo = 0, hi = l.finite_end() - 1;
  if (!(t >= 0)) return hi;
  if (magnitude_value(l, hi) <= t) return hi;
  if (magnitude_value(l, 0) > t) return 0;
  while (hi - lo > 1) {  // invariant: value(lo) <= t < value(hi)
    const uint64_t mid = lo + (hi - lo) / 2;
    (magnitude_value(l, mid) <= t ? lo : hi) = mid;
  }
  return lo;
}

template <class U>
using Params = ScanParams<U>;

template <class U>
struct Acc {
  uint64_t nonfinite = 0, pinf = 0, ninf = 0, zero = 0, below_normal = 0, above_thr = 0;
  U mn = std::numeric_limits<U>::max(), mx = 0;
};

// Counters of a chunk have the element's width (one vector lane per element: the loop vectorises);
// chunks are short enough that they cannot wrap.
template <class U>
constexpr uint32_t kChunk = sizeof(U) == 1 ? 127u : 32767u;  // signed counters must not wrap

// The hot loop does the least work per element that still gives every statistic: six compares
// feeding six counters, one min and one max (fp32 must keep up with np.sum's bandwidth).
//  - NaN, subnormal and over-threshold counts are derived from these (scan_core.h, derive());
//  - min over all magnitudes is the finite min (non-finite ones are the largest patterns);
//  - max over all magnitudes is the finite max unless the chunk holds a non-finite value, and only
//    then is the chunk scanned again with the non-finite values masked out.
// Magnitudes have the sign bit cleared, so every comparison is done on the signed type: x86 has
// signed vector compares only, and unsigned ones cost extra instructions per element.
template <class U>
[[gnu::always_inline]] inline void scan_chunk(const unsigned char* __restrict p, uint32_t n, const Params<U>& q,
                                              Acc<U>& acc) {
  using S = std::make_signed_t<U>;
  constexpr S abs_mask = S(std::numeric_limits<S>::max());  // every format: all bits but the sign
  const S last_finite = S(q.last_finite), min_normal = S(q.min_normal), thr = S(q.threshold);
  const S pinf_bits = S(q.pinf), ninf_bits = S(q.ninf);
  S nonfinite = 0, pinf = 0, ninf = 0, zero = 0, below = 0, above = 0;
  S mn = abs_mask, mx = 0;
  for (uint32_t i = 0; i < n; ++i) {
    U x;
    std::memcpy(&x, p + size_t(i) * sizeof(U), sizeof(U));
    const S a = S(x & U(abs_mask));
    nonfinite += S(a > last_finite);
    pinf += S(S(x) == pinf_bits);
    ninf += S(S(x) == ninf_bits);
    zero += S(a == 0);
    below += S(a < min_normal);
    above += S(a > thr);
    mn = a < mn ? a : mn;
    mx = a > mx ? a : mx;
  }
  if (nonfinite != 0) {  // rare: recompute the max over the finite values of this chunk only
    mx = 0;
    for (uint32_t i = 0; i < n; ++i) {
      U x;
      std::memcpy(&x, p + size_t(i) * sizeof(U), sizeof(U));
      const S a = S(x & U(abs_mask));
      const S finite_a = S(a & -S(a <= last_finite));
      mx = finite_a > mx ? finite_a : mx;
    }
  }
  acc.nonfinite += U(nonfinite);
  acc.pinf += U(pinf);
  acc.ninf += U(ninf);
  acc.zero += U(zero);
  acc.below_normal += U(below);
  acc.above_thr += U(above);
  if (U(mn) < acc.mn) acc.mn = U(mn);
  if (U(mx) > acc.mx) acc.mx = U(mx);
}

template <class U>
[[gnu::always_inline]] inline void scan_all(const unsigned char* p, uint64_t n, const Params<U>& q, Acc<U>& acc) {
  while (n > 0) {
    const uint32_t m = n < kChunk<U> ? uint32_t(n) : kChunk<U>;
    scan_chunk<U>(p, m, q, acc);
    p += size_t(m) * sizeof(U);
    n -= m;
  }
}

// x86-64: an AVX2 twin chosen at run time, in the section opforge reads as dispatched code
// (src/kernels/utils/opforge_dispatch.h: OPFORGE_DISPATCHED, written out here since this op does
// not include utils/). Elsewhere (aarch64, e.g. Grace) the baseline
// already has 128-bit SIMD (NEON), and the generic body is the only one.
#if defined(__x86_64__) || defined(__i386__)
#define OVF_AVX2_TWIN(U)                                                                                              \
  __attribute__((target("avx2"), section("opforge_dispatch"))) void scan_avx2_##U(const unsigned char* p, uint64_t n, \
                                                                                  const Params<U>& q, Acc<U>& acc) {  \
    scan_all<U>(p, n, q, acc);                                                                                        \
  }
#else
#define OVF_AVX2_TWIN(U) \
  void scan_avx2_##U(const unsigned char* p, uint64_t n, const Params<U>& q, Acc<U>& acc) { scan_all<U>(p, n, q, acc); }
#endif
#define OVF_VARIANTS(U)                                                                        \
  void scan_generic_##U(const unsigned char* p, uint64_t n, const Params<U>& q, Acc<U>& acc) { \
    scan_all<U>(p, n, q, acc);                                                                 \
  }                                                                                            \
  OVF_AVX2_TWIN(U)
OVF_VARIANTS(uint8_t)
OVF_VARIANTS(uint16_t)
OVF_VARIANTS(uint32_t)
OVF_VARIANTS(uint64_t)
#undef OVF_VARIANTS
#undef OVF_AVX2_TWIN

bool use_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return yes;
#else
  return false;
#endif
}

template <class U>
void scan(const unsigned char* p, uint64_t n, const Params<U>& q, Acc<U>& acc);
#define OVF_DISPATCH(U)                                                               \
  template <>                                                                         \
  void scan<U>(const unsigned char* p, uint64_t n, const Params<U>& q, Acc<U>& acc) { \
    if (use_avx2()) scan_avx2_##U(p, n, q, acc);                                      \
    else scan_generic_##U(p, n, q, acc);                                              \
  }
OVF_DISPATCH(uint8_t)
OVF_DISPATCH(uint16_t)
OVF_DISPATCH(uint32_t)
OVF_DISPATCH(uint64_t)
#undef OVF_DISPATCH

template <class U>
void stats_typed(const Layout& l, const void* data, uint64_t n, double threshold, opforge_overflow_stats* out) {
  const Params<U> q = scan_params<U>(l, threshold_bits(l, threshold));
  Acc<U> acc;
  scan<U>(static_cast<const unsigned char*>(data), n, q, acc);
  const DerivedCounts d = derive(
      {acc.nonfinite, acc.pinf, acc.ninf, acc.zero, acc.below_normal, acc.above_thr, acc.mn, acc.mx}, n, l.has_inf);
  *out = {};
  out->count = n;
  store_counts(d, out);
  out->abs_min = d.finite ? magnitude_value(l, acc.mn) : std::numeric_limits<double>::infinity();
  out->abs_max = d.finite ? magnitude_value(l, acc.mx) : -1.0;
}

double dtype_max(const Layout& l) { return magnitude_value(l, l.finite_end() - 1); }

}  // namespace

int stats_cpu(const void* data, uint64_t n, int dtype, double threshold, opforge_overflow_stats* out) {
  const Layout l = layout_of(dtype);
  if (l.bytes == 0) return fail(OPFORGE_OVERFLOW_EINVAL, "unknown dtype code " + std::to_string(dtype));
  if (out == nullptr) return fail(OPFORGE_OVERFLOW_EINVAL, "out is null");
  if (n > 0 && data == nullptr) return fail(OPFORGE_OVERFLOW_EINVAL, "data is null with n > 0");
  if (!(threshold > 0)) threshold = dtype_max(l) / 2;
  switch (l.bytes) {
    case 1: stats_typed<uint8_t>(l, data, n, threshold, out); break;
    case 2: stats_typed<uint16_t>(l, data, n, threshold, out); break;
    case 4: stats_typed<uint32_t>(l, data, n, threshold, out); break;
    default: stats_typed<uint64_t>(l, data, n, threshold, out); break;
  }
  return OPFORGE_OVERFLOW_OK;
}

int set_error(int code, const char* message) { return fail(code, message); }

uint64_t threshold_bits_for(int dtype, double t) {
  const Layout l = layout_of(dtype);
  if (!(t > 0)) t = dtype_max(l) / 2;
  return threshold_bits(l, t);
}

}  // namespace opforge_overflow

using namespace opforge_overflow;  // NOLINT: C ABI shims only

extern "C" {

int opforge_overflow_abi_version(void) { return OPFORGE_OVERFLOW_ABI_VERSION; }

const char* opforge_overflow_last_error(void) { return g_last_error.c_str(); }

double opforge_overflow_dtype_max(int dtype) {
  const Layout l = layout_of(dtype);
  if (l.bytes == 0) return std::numeric_limits<double>::quiet_NaN();
  return dtype_max(l);
}

const char* opforge_overflow_cpu_isa(void) { return use_avx2() ? "avx2" : "generic"; }

int opforge_overflow_stats_cpu(const void* data, uint64_t n, int dtype, double threshold, opforge_overflow_stats* out) {
  return stats_cpu(data, n, dtype, threshold, out);
}

int opforge_overflow_stats_cpu_multi(const opforge_overflow_tensor* tensors, int ntensors,
                                     opforge_overflow_stats* out) {
  if (ntensors < 0 || (ntensors > 0 && (tensors == nullptr || out == nullptr)))
    return fail(OPFORGE_OVERFLOW_EINVAL, "bad tensor list");
  for (int i = 0; i < ntensors; ++i) {
    const int rc = stats_cpu(tensors[i].data, tensors[i].count, tensors[i].dtype, tensors[i].threshold, &out[i]);
    if (rc != 0) return fail(rc, "tensor " + std::to_string(i) + ": " + g_last_error);
  }
  return OPFORGE_OVERFLOW_OK;
}

int opforge_overflow_stats_cpu_noop(const opforge_overflow_tensor* tensors, int ntensors, opforge_overflow_stats* out) {
  (void)tensors;
  (void)ntensors;
  (void)out;
  return OPFORGE_OVERFLOW_OK;
}

}  // extern "C"
