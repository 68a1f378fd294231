// x86-64's paths: AVX-512 and AVX2, each checked with cpuid (through __builtin_cpu_supports).
#include <cpuid.h>

#include "adam_kernels.h"
#include "cpu_adam.h"

namespace opforge_cpu_adam {

namespace {

/// F16C from CPUID leaf 1 itself: gcc before 11 has no "f16c" for __builtin_cpu_supports.
bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}

// __builtin_cpu_supports also checks that the OS saves the wide registers (XCR0).
bool has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
}

bool has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

const Path kPaths[] = {
    {OPFORGE_CPU_ADAM_AVX512, step_avx512, has_avx512},
    {OPFORGE_CPU_ADAM_AVX2, step_avx2, has_avx2},
};

}  // namespace

const Path* machine_paths(std::size_t& count) {
  count = sizeof kPaths / sizeof kPaths[0];
  return kPaths;
}

}  // namespace opforge_cpu_adam
