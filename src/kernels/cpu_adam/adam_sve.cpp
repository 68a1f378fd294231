// SVE, vector-length agnostic: as many floats a vector as the CPU's length holds (4 on Grace's
// 128-bit SVE2, 8 on Graviton3's 256-bit SVE, up to 64), the tail under a predicate, so no
// element takes a different path from its neighbours. Compiled with -march=armv8.2-a+sve in this
// file only (op.toml) and called only where AT_HWCAP says SVE (adam_arm.cpp); everything here is
// OPFORGE_DISPATCHED, so the cpu_target check counts it as dispatched code.
#include <arm_sve.h>

#include "adam_kernels.h"
#include "opforge_dispatch.h"

namespace opforge_cpu_adam {

namespace {

/// to_bf16's steps on every active lane; each result in the low half of its 32-bit lane.
OPFORGE_DISPATCHED svuint32_t bf16_lanes(svbool_t pg, svfloat32_t x) {
  svuint32_t u = svreinterpret_u32_f32(x);
  svuint32_t lsb = svand_n_u32_x(pg, svlsr_n_u32_x(pg, u, 16), 1);
  svuint32_t r = svadd_u32_x(pg, u, svadd_n_u32_x(pg, lsb, 0x7fff));
  svbool_t nan = svcmpuo_f32(pg, x, x);
  r = svsel_u32(nan, svorr_n_u32_x(pg, u, 0x400000), r);
  return svlsr_n_u32_x(pg, r, 16);
}

}  // namespace

OPFORGE_DISPATCHED void step_sve(const Args& a, std::size_t begin, std::size_t end) {
  const svfloat32_t b1 = svdup_n_f32(a.beta1), b2 = svdup_n_f32(a.beta2);
  const svfloat32_t ob1 = svdup_n_f32(a.one_minus_beta1), ob2 = svdup_n_f32(a.one_minus_beta2);
  const svfloat32_t eps = svdup_n_f32(a.eps), l2 = svdup_n_f32(a.l2);
  const svfloat32_t decay = svdup_n_f32(a.decay), ss = svdup_n_f32(a.step_size);
  const svfloat32_t sbc2 = svdup_n_f32(a.sqrt_bc2);
  for (std::size_t i = begin; i < end; i += svcntw()) {
    const svbool_t pg = svwhilelt_b32_u64(i, end);
    svfloat32_t p = svld1_f32(pg, a.p + i);
    svfloat32_t g = svmla_f32_x(pg, svld1_f32(pg, a.g + i), l2, p);
    svfloat32_t m = svmla_f32_x(pg, svmul_f32_x(pg, ob1, g), b1, svld1_f32(pg, a.m + i));
    svfloat32_t v = svmla_f32_x(pg, svmul_f32_x(pg, ob2, svmul_f32_x(pg, g, g)), b2, svld1_f32(pg, a.v + i));
    svfloat32_t denom = svadd_f32_x(pg, svdiv_f32_x(pg, svsqrt_f32_x(pg, v), sbc2), eps);
    p = svmls_f32_x(pg, svmul_f32_x(pg, p, decay), ss, svdiv_f32_x(pg, m, denom));
    svst1_f32(pg, a.p + i, p);
    svst1_f32(pg, a.m + i, m);
    svst1_f32(pg, a.v + i, v);
    // FCVT leaves each half in the low 16 bits of its 32-bit lane; ST1H stores those bits.
    if (a.half_kind == Half::fp16) svst1h_u32(pg, a.half + i, svreinterpret_u32_f16(svcvt_f16_f32_x(pg, p)));
    else if (a.half_kind == Half::bf16) svst1h_u32(pg, a.half + i, bf16_lanes(pg, p));
  }
}

}  // namespace opforge_cpu_adam
