#pragma once
/// C ABI of libopforge_cpu_adam.so: one Adam/AdamW step over fp32 arrays, in place, on the CPU.
/// All functions return 0 on success or a negative errno; the reason is in
/// opforge_cpu_adam_last_error() (thread-local).
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  OPFORGE_CPU_ADAM_SCALAR = 0,  ///< plain C++, compiled without vectorisation
  OPFORGE_CPU_ADAM_AVX2 = 1,    ///< AVX2 + FMA + F16C, 8 floats a vector
  OPFORGE_CPU_ADAM_AVX512 = 2,  ///< AVX-512 F/BW/DQ/VL, 16 floats a vector
  OPFORGE_CPU_ADAM_NEON = 3,    ///< AArch64 Advanced SIMD (every AArch64 CPU), 4 floats a vector
  OPFORGE_CPU_ADAM_SVE = 4,     ///< AArch64 SVE, as many floats a vector as the CPU's length holds
};

enum {
  OPFORGE_CPU_ADAM_ADAMW = 1,               ///< decoupled weight decay (AdamW); else L2 into the gradient
  OPFORGE_CPU_ADAM_NO_BIAS_CORRECTION = 2,  ///< skip the 1 - beta^t corrections
  OPFORGE_CPU_ADAM_HALF_FP16 = 4,           ///< also write the new parameters as IEEE fp16 to half_out
  OPFORGE_CPU_ADAM_HALF_BF16 = 8,           ///< … or as bfloat16 (round to nearest even)
};

int opforge_cpu_adam_abi_version(void);
const char* opforge_cpu_adam_last_error(void);

/// The SIMD level steps use now: the best the running CPU supports, or what
/// OPFORGE_CPU_ADAM_SIMD (scalar|avx2|avx512 on x86-64, scalar|neon|sve on AArch64) or
/// opforge_cpu_adam_set_simd_level asked for.
int opforge_cpu_adam_simd_level(void);
/// "scalar", "avx2", "avx512", "neon" or "sve"; NULL for an unknown level.
const char* opforge_cpu_adam_simd_name(int level);
/// The best level the running CPU supports.
int opforge_cpu_adam_best_simd_level(void);
/// Forces a level (tests, benchmarks); -ENOTSUP when this CPU (or machine) lacks it, -EINVAL when
/// unknown.
int opforge_cpu_adam_set_simd_level(int level);

/// One step over n elements: step is the 1-based step number (for bias correction); flags from
/// the enum above; half_out (n uint16 values) only with a HALF flag; threads = 0: every usable CPU.
int opforge_cpu_adam_step(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, uint64_t n,
                          int64_t step, float lr, float beta1, float beta2, float eps, float weight_decay, int flags,
                          void* half_out, int threads);

#ifdef __cplusplus
}
#endif
