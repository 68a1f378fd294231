// AVX-512 (F, BW, DQ, VL): 16 floats a vector; the tail uses masked loads and stores, so no
// element takes a different path from its neighbours.
// GCC 12 warns about the deliberately undefined registers inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "adam_kernels.h"
#include "opforge_dispatch.h"

namespace opforge_cpu_adam {

namespace {
OPFORGE_DISPATCHED __m256i bf16x16(__m512 x) {
  __m512i u = _mm512_castps_si512(x);
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
  __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(u, _mm512_set1_epi32(0x400000)));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
}
}  // namespace

OPFORGE_DISPATCHED void step_avx512(const Args& a, std::size_t begin, std::size_t end) {
  const __m512 b1 = _mm512_set1_ps(a.beta1), b2 = _mm512_set1_ps(a.beta2);
  const __m512 ob1 = _mm512_set1_ps(a.one_minus_beta1), ob2 = _mm512_set1_ps(a.one_minus_beta2);
  const __m512 eps = _mm512_set1_ps(a.eps), l2 = _mm512_set1_ps(a.l2);
  const __m512 decay = _mm512_set1_ps(a.decay), ss = _mm512_set1_ps(a.step_size);
  const __m512 sbc2 = _mm512_set1_ps(a.sqrt_bc2);
  for (std::size_t i = begin; i < end; i += 16) {
    std::size_t left = end - i;
    __mmask16 k = left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1);
    __m512 p = _mm512_maskz_loadu_ps(k, a.p + i);
    __m512 g = _mm512_fmadd_ps(l2, p, _mm512_maskz_loadu_ps(k, a.g + i));
    __m512 m = _mm512_fmadd_ps(b1, _mm512_maskz_loadu_ps(k, a.m + i), _mm512_mul_ps(ob1, g));
    __m512 v = _mm512_fmadd_ps(b2, _mm512_maskz_loadu_ps(k, a.v + i), _mm512_mul_ps(ob2, _mm512_mul_ps(g, g)));
    __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(v), sbc2), eps);
    p = _mm512_fnmadd_ps(ss, _mm512_div_ps(m, denom), _mm512_mul_ps(p, decay));
    _mm512_mask_storeu_ps(a.p + i, k, p);
    _mm512_mask_storeu_ps(a.m + i, k, m);
    _mm512_mask_storeu_ps(a.v + i, k, v);
    if (a.half_kind == Half::fp16)
      _mm256_mask_storeu_epi16(a.half + i, k, _mm512_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    else if (a.half_kind == Half::bf16) _mm256_mask_storeu_epi16(a.half + i, k, bf16x16(p));
  }
}

}  // namespace opforge_cpu_adam
