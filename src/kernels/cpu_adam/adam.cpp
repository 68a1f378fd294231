// opforge_cpu_adam_*: the C ABI, argument checks and the runtime SIMD dispatch over this
// machine's paths (machine_paths: adam_x86.cpp or adam_arm.cpp).
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "adam_kernels.h"
#include "cpu_adam.h"
#include "parallel.h"

#define OPFORGE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using opforge_cpu_adam::Args;
using opforge_cpu_adam::Half;
using opforge_cpu_adam::Path;

thread_local std::string g_error;

int fail(int code, std::string message) {
  g_error = std::move(message);
  return code;
}

/// The machine's path for `level`; nullptr for the scalar level and for another machine's.
const Path* path_of(int level) {
  std::size_t count = 0;
  const Path* paths = opforge_cpu_adam::machine_paths(count);
  for (std::size_t i = 0; i < count; ++i)
    if (paths[i].level == level) return &paths[i];
  return nullptr;
}

bool cpu_has(int level) {
  if (level == OPFORGE_CPU_ADAM_SCALAR) return true;
  const Path* p = path_of(level);
  return p && p->supported();
}

int best_level() {
  std::size_t count = 0;
  const Path* paths = opforge_cpu_adam::machine_paths(count);
  for (std::size_t i = 0; i < count; ++i)
    if (paths[i].supported()) return paths[i].level;
  return OPFORGE_CPU_ADAM_SCALAR;
}

constexpr int kLastLevel = OPFORGE_CPU_ADAM_SVE;

int parse_level(const char* s) {
  if (!std::strcmp(s, "none")) return OPFORGE_CPU_ADAM_SCALAR;
  for (int l = OPFORGE_CPU_ADAM_SCALAR; l <= kLastLevel; ++l)
    if (!std::strcmp(s, opforge_cpu_adam_simd_name(l))) return l;
  return -1;
}

// The level decided once at first use: the environment may lower it (never raise it past what
// the CPU has — a wheel must not SIGILL), and set_simd_level changes it afterwards.
std::atomic<int> g_level{-1};

int current_level() {
  int l = g_level.load(std::memory_order_relaxed);
  if (l >= 0) return l;
  l = best_level();
  if (const char* env = std::getenv("OPFORGE_CPU_ADAM_SIMD"); env && *env) {
    int want = parse_level(env);
    if (want >= 0 && cpu_has(want)) l = want;
  }
  g_level.store(l, std::memory_order_relaxed);
  return l;
}

}  // namespace

OPFORGE_EXPORT int opforge_cpu_adam_abi_version(void) { return 1; }

OPFORGE_EXPORT const char* opforge_cpu_adam_last_error(void) { return g_error.c_str(); }

OPFORGE_EXPORT const char* opforge_cpu_adam_simd_name(int level) {
  switch (level) {
    case OPFORGE_CPU_ADAM_SCALAR: return "scalar";
    case OPFORGE_CPU_ADAM_AVX2: return "avx2";
    case OPFORGE_CPU_ADAM_AVX512: return "avx512";
    case OPFORGE_CPU_ADAM_NEON: return "neon";
    case OPFORGE_CPU_ADAM_SVE: return "sve";
    default: return nullptr;
  }
}

OPFORGE_EXPORT int opforge_cpu_adam_simd_level(void) { return current_level(); }

OPFORGE_EXPORT int opforge_cpu_adam_best_simd_level(void) { return best_level(); }

OPFORGE_EXPORT int opforge_cpu_adam_set_simd_level(int level) {
  const char* name = opforge_cpu_adam_simd_name(level);
  if (!name)
    return fail(-EINVAL, "opforge_cpu_adam_set_simd_level: unknown level " + std::to_string(level) +
                             " (0 scalar, 1 avx2, 2 avx512, 3 neon, 4 sve)");
  if (!cpu_has(level))
    return fail(-ENOTSUP, std::string("opforge_cpu_adam_set_simd_level: this CPU does not support ") + name);
  g_level.store(level, std::memory_order_relaxed);
  return 0;
}

OPFORGE_EXPORT int opforge_cpu_adam_step(float* params, const float* grads, float* exp_avg, float* exp_avg_sq,
                                         uint64_t n, int64_t step, float lr, float beta1, float beta2, float eps,
                                         float weight_decay, int flags, void* half_out, int threads) {
  const int known = OPFORGE_CPU_ADAM_ADAMW | OPFORGE_CPU_ADAM_NO_BIAS_CORRECTION | OPFORGE_CPU_ADAM_HALF_FP16 |
                    OPFORGE_CPU_ADAM_HALF_BF16;
  if (flags & ~known) return fail(-EINVAL, "opforge_cpu_adam_step: unknown flags " + std::to_string(flags));
  bool fp16 = flags & OPFORGE_CPU_ADAM_HALF_FP16, bf16 = flags & OPFORGE_CPU_ADAM_HALF_BF16;
  if (fp16 && bf16) return fail(-EINVAL, "opforge_cpu_adam_step: ask for fp16 or bf16 output, not both");
  if (n && (!params || !grads || !exp_avg || !exp_avg_sq))
    return fail(-EINVAL, "opforge_cpu_adam_step: null parameter, gradient or moment pointer");
  if ((fp16 || bf16) && n && !half_out)
    return fail(-EINVAL, "opforge_cpu_adam_step: half-precision output requested but half_out is null");
  if (step < 1) return fail(-EINVAL, "opforge_cpu_adam_step: step must be >= 1, got " + std::to_string(step));
  if (!(beta1 >= 0.0f && beta1 < 1.0f) || !(beta2 >= 0.0f && beta2 < 1.0f))
    return fail(-EINVAL, "opforge_cpu_adam_step: betas must lie in [0, 1)");
  if (!(eps >= 0.0f) || !(lr >= 0.0f) || !(weight_decay >= 0.0f))
    return fail(-EINVAL, "opforge_cpu_adam_step: lr, eps and weight_decay must be >= 0");

  bool adamw = flags & OPFORGE_CPU_ADAM_ADAMW;
  bool correct = !(flags & OPFORGE_CPU_ADAM_NO_BIAS_CORRECTION);
  double bc1 = correct ? 1.0 - std::pow(double(beta1), double(step)) : 1.0;
  double bc2 = correct ? 1.0 - std::pow(double(beta2), double(step)) : 1.0;
  Args a{};
  a.p = params;
  a.g = grads;
  a.m = exp_avg;
  a.v = exp_avg_sq;
  a.half = static_cast<std::uint16_t*>(half_out);
  a.half_kind = fp16 ? Half::fp16 : bf16 ? Half::bf16 : Half::none;
  a.beta1 = beta1;
  a.beta2 = beta2;
  a.one_minus_beta1 = 1.0f - beta1;
  a.one_minus_beta2 = 1.0f - beta2;
  a.eps = eps;
  a.l2 = adamw ? 0.0f : weight_decay;
  a.decay = adamw ? static_cast<float>(1.0 - double(lr) * double(weight_decay)) : 1.0f;
  a.step_size = static_cast<float>(double(lr) / bc1);
  a.sqrt_bc2 = static_cast<float>(std::sqrt(bc2));

  const Path* path = path_of(current_level());
  opforge_cpu_adam::Kernel kernel = path ? path->kernel : opforge_cpu_adam::step_scalar;
  // Below ~64k elements a step takes microseconds: threads would cost more than they save.
  if (n < (uint64_t{1} << 16)) threads = 1;
  opforge_kernels::parallel_for(static_cast<std::size_t>(n), 64, threads,
                                [&](std::size_t b, std::size_t e) { kernel(a, b, e); });
  return 0;
}
