// NEON (AArch64 Advanced SIMD, in every AArch64 CPU, so no flags and no dispatch mark): 4 floats a
// vector; the same operations in the same order as the scalar path, with fused multiply-adds (the
// only source of differences, a rounding each), as the x86-64 paths do.
#include <arm_neon.h>

#include "adam_kernels.h"

namespace opforge_cpu_adam {

namespace {

/// Round to nearest even into bfloat16, NaNs kept quiet: to_bf16's steps on four lanes.
uint16x4_t bf16x4(float32x4_t x) {
  uint32x4_t u = vreinterpretq_u32_f32(x);
  uint32x4_t lsb = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
  uint32x4_t r = vaddq_u32(u, vaddq_u32(vdupq_n_u32(0x7fff), lsb));
  uint32x4_t nan = vmvnq_u32(vceqq_f32(x, x));
  r = vbslq_u32(nan, vorrq_u32(u, vdupq_n_u32(0x400000)), r);
  return vshrn_n_u32(r, 16);
}

}  // namespace

void step_neon(const Args& a, std::size_t begin, std::size_t end) {
  const float32x4_t b1 = vdupq_n_f32(a.beta1), b2 = vdupq_n_f32(a.beta2);
  const float32x4_t ob1 = vdupq_n_f32(a.one_minus_beta1), ob2 = vdupq_n_f32(a.one_minus_beta2);
  const float32x4_t eps = vdupq_n_f32(a.eps), l2 = vdupq_n_f32(a.l2);
  const float32x4_t decay = vdupq_n_f32(a.decay), ss = vdupq_n_f32(a.step_size);
  const float32x4_t sbc2 = vdupq_n_f32(a.sqrt_bc2);
  std::size_t i = begin;
  for (; i + 4 <= end; i += 4) {
    float32x4_t p = vld1q_f32(a.p + i);
    float32x4_t g = vfmaq_f32(vld1q_f32(a.g + i), l2, p);
    float32x4_t m = vfmaq_f32(vmulq_f32(ob1, g), b1, vld1q_f32(a.m + i));
    float32x4_t v = vfmaq_f32(vmulq_f32(ob2, vmulq_f32(g, g)), b2, vld1q_f32(a.v + i));
    float32x4_t denom = vaddq_f32(vdivq_f32(vsqrtq_f32(v), sbc2), eps);
    p = vfmsq_f32(vmulq_f32(p, decay), ss, vdivq_f32(m, denom));
    vst1q_f32(a.p + i, p);
    vst1q_f32(a.m + i, m);
    vst1q_f32(a.v + i, v);
    // FCVTN rounds as FPCR says: to nearest even, the default every process starts with.
    if (a.half_kind == Half::fp16) vst1_u16(a.half + i, vreinterpret_u16_f16(vcvt_f16_f32(p)));
    else if (a.half_kind == Half::bf16) vst1_u16(a.half + i, bf16x4(p));
  }
  if (i < end) step_scalar(a, i, end);
}

}  // namespace opforge_cpu_adam
