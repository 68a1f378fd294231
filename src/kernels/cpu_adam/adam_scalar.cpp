// The reference path: one element at a time, compiled with -fno-tree-vectorize (op.toml) so that
// "vectorisation disabled" really means scalar code.
#include <cmath>
#include <cstring>

#include "adam_kernels.h"

namespace opforge_cpu_adam {

namespace {
std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

std::uint16_t to_fp16(float f) {
  std::uint32_t u = bits(f);
  std::uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((u >> 13) & 0x3ffu));
  if (u >= 0x47800000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65536 (and inf)
  std::uint32_t o;
  if (u < 0x38800000u) {
    // Subnormal or zero in fp16: adding 0.5 lines the 10 mantissa bits up at the bottom of a
    // float, and the float addition rounds to nearest even, as the hardware conversion does.
    const std::uint32_t magic = 126u << 23;
    o = bits(from_bits(u) + from_bits(magic)) - magic;
  } else {
    std::uint32_t odd = (u >> 13) & 1u;
    u += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu + odd;
    o = u >> 13;  // a carry into the exponent gives 0x7c00 (inf) for [65520, 65536)
  }
  return static_cast<std::uint16_t>(o | sign);
}

std::uint16_t to_bf16(float f) {
  std::uint32_t u = bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

void step_scalar(const Args& a, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    float p = a.p[i];
    float g = a.g[i] + a.l2 * p;
    float m = a.beta1 * a.m[i] + a.one_minus_beta1 * g;
    float v = a.beta2 * a.v[i] + a.one_minus_beta2 * (g * g);
    float denom = std::sqrt(v) / a.sqrt_bc2 + a.eps;
    p = p * a.decay - a.step_size * (m / denom);
    a.p[i] = p;
    a.m[i] = m;
    a.v[i] = v;
    if (a.half_kind == Half::fp16) a.half[i] = to_fp16(p);
    else if (a.half_kind == Half::bf16) a.half[i] = to_bf16(p);
  }
}

}  // namespace opforge_cpu_adam
