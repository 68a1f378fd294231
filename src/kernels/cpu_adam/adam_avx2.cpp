// AVX2 + FMA + F16C: 8 floats a vector; the same operations in the same order as the scalar path,
// with fused multiply-adds (the only source of differences, a rounding each).
#include <immintrin.h>

#include "adam_kernels.h"
#include "opforge_dispatch.h"

namespace opforge_cpu_adam {

namespace {
OPFORGE_DISPATCHED __m128i bf16x8(__m256 x) {
  __m256i u = _mm256_castps_si256(x);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
  __m256i quiet = _mm256_or_si256(u, _mm256_set1_epi32(0x400000));
  __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  r = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_castsi256_ps(quiet), nan));
  r = _mm256_srli_epi32(r, 16);
  __m256i packed = _mm256_packus_epi32(r, r);       // per 128-bit lane
  packed = _mm256_permute4x64_epi64(packed, 0x08);  // lanes 0 and 2 side by side
  return _mm256_castsi256_si128(packed);
}
}  // namespace

OPFORGE_DISPATCHED void step_avx2(const Args& a, std::size_t begin, std::size_t end) {
  const __m256 b1 = _mm256_set1_ps(a.beta1), b2 = _mm256_set1_ps(a.beta2);
  const __m256 ob1 = _mm256_set1_ps(a.one_minus_beta1), ob2 = _mm256_set1_ps(a.one_minus_beta2);
  const __m256 eps = _mm256_set1_ps(a.eps), l2 = _mm256_set1_ps(a.l2);
  const __m256 decay = _mm256_set1_ps(a.decay), ss = _mm256_set1_ps(a.step_size);
  const __m256 sbc2 = _mm256_set1_ps(a.sqrt_bc2);
  std::size_t i = begin;
  for (; i + 8 <= end; i += 8) {
    __m256 p = _mm256_loadu_ps(a.p + i);
    __m256 g = _mm256_fmadd_ps(l2, p, _mm256_loadu_ps(a.g + i));
    __m256 m = _mm256_fmadd_ps(b1, _mm256_loadu_ps(a.m + i), _mm256_mul_ps(ob1, g));
    __m256 v = _mm256_fmadd_ps(b2, _mm256_loadu_ps(a.v + i), _mm256_mul_ps(ob2, _mm256_mul_ps(g, g)));
    __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(v), sbc2), eps);
    p = _mm256_fnmadd_ps(ss, _mm256_div_ps(m, denom), _mm256_mul_ps(p, decay));
    _mm256_storeu_ps(a.p + i, p);
    _mm256_storeu_ps(a.m + i, m);
    _mm256_storeu_ps(a.v + i, v);
    if (a.half_kind == Half::fp16)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(a.half + i),
                       _mm256_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    else if (a.half_kind == Half::bf16) _mm_storeu_si128(reinterpret_cast<__m128i*>(a.half + i), bf16x8(p));
  }
  if (i < end) step_scalar(a, i, end);
}

}  // namespace opforge_cpu_adam
