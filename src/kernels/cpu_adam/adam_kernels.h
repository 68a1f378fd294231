#pragma once
// The per-ISA kernels behind opforge_cpu_adam_step; each lives in its own file compiled with its
// own ISA flags (op.toml [machine.<platform>.source_flags]) and is called only after the
// dispatcher checked the CPU. Which kernels a machine has, and how its CPU says so, is one table
// per machine (machine_paths: adam_x86.cpp, adam_arm.cpp), so adam.cpp holds no machine's code.
#include <cstddef>
#include <cstdint>

namespace opforge_cpu_adam {

enum class Half { none, fp16, bf16 };

/// Everything a kernel needs, with the scalars already derived (bias corrections in double).
struct Args {
  float* p;
  const float* g;
  float* m;
  float* v;
  std::uint16_t* half;  // null unless half != none
  Half half_kind;
  float beta1, beta2, one_minus_beta1, one_minus_beta2;
  float eps;
  float l2;         // weight decay added to the gradient (Adam); 0 for AdamW
  float decay;      // 1 - lr * wd for AdamW; 1 for Adam
  float step_size;  // lr / (1 - beta1^t)
  float sqrt_bc2;   // sqrt(1 - beta2^t)
};

using Kernel = void (*)(const Args& a, std::size_t begin, std::size_t end);

void step_scalar(const Args& a, std::size_t begin, std::size_t end);
void step_avx2(const Args& a, std::size_t begin, std::size_t end);
void step_avx512(const Args& a, std::size_t begin, std::size_t end);
void step_neon(const Args& a, std::size_t begin, std::size_t end);
void step_sve(const Args& a, std::size_t begin, std::size_t end);

/// A vector path of this machine: its level (cpu_adam.h's enum), its kernel, and whether the
/// running CPU (and OS) can run it.
struct Path {
  int level;
  Kernel kernel;
  bool (*supported)();
};

/// This machine's vector paths, best first, `count` of them; the scalar path is adam.cpp's own.
const Path* machine_paths(std::size_t& count);

/// Scalar conversions, matching the hardware's round-to-nearest-even ones bit for bit.
std::uint16_t to_fp16(float f);
std::uint16_t to_bf16(float f);

}  // namespace opforge_cpu_adam
