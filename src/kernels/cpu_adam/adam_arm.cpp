// AArch64's paths: SVE where the kernel says the CPU has it (AT_HWCAP's HWCAP_SVE, which Linux
// sets only when it also saves the SVE registers), and NEON (Advanced SIMD), which every AArch64
// CPU has.
#include <sys/auxv.h>

#include "adam_kernels.h"
#include "cpu_adam.h"

#ifndef HWCAP_SVE
#define HWCAP_SVE (1UL << 22)  // asm/hwcap.h; older C libraries' sys/auxv.h lack it
#endif

namespace opforge_cpu_adam {

namespace {

bool has_sve() { return (getauxval(AT_HWCAP) & HWCAP_SVE) != 0; }

bool has_neon() { return true; }

const Path kPaths[] = {
    {OPFORGE_CPU_ADAM_SVE, step_sve, has_sve},
    {OPFORGE_CPU_ADAM_NEON, step_neon, has_neon},
};

}  // namespace

const Path* machine_paths(std::size_t& count) {
  count = sizeof kPaths / sizeof kPaths[0];
  return kPaths;
}

}  // namespace opforge_cpu_adam
