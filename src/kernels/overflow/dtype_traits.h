// Bit layouts of the supported floating-point formats. Every statistic is computed on the
// sign-cleared bit pattern: for IEEE-style formats it orders like the magnitude, so abs-min/max,
// thresholds and classes are integer comparisons (vectorise well, exact, no FP exceptions).
#pragma once
#include <stdint.h>

#ifdef __CUDACC__
#define OVF_HD __host__ __device__
#else
#define OVF_HD
#endif

namespace opforge_overflow {

struct Layout {
  int bytes;
  int exp_bits;
  int mant_bits;
  bool has_inf;  // e4m3fn has no inf; its only NaN pattern is S.1111.111
  uint64_t abs_mask() const { return (uint64_t(1) << (exp_bits + mant_bits)) - 1; }
  uint64_t exp_mask() const { return ((uint64_t(1) << exp_bits) - 1) << mant_bits; }
  /// Magnitudes below this are finite.
  uint64_t finite_end() const { return has_inf ? exp_mask() : abs_mask(); }
  /// Magnitudes at or above this are NaN.
  uint64_t nan_begin() const { return has_inf ? exp_mask() + 1 : abs_mask(); }
  uint64_t min_normal() const { return uint64_t(1) << mant_bits; }
  int bias() const { return (1 << (exp_bits - 1)) - 1; }
};

/// Layout of an ABI dtype code; bytes == 0 for an unknown code.
inline Layout layout_of(int dtype) {
  switch (dtype) {
    case 0: return {4, 8, 23, true};
    case 1: return {2, 5, 10, true};
    case 2: return {2, 8, 7, true};
    case 3: return {8, 11, 52, true};
    case 4: return {1, 4, 3, false};
    case 5: return {1, 5, 2, true};
    default: return {0, 0, 0, false};
  }
}

}  // namespace opforge_overflow
