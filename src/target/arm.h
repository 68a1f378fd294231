#pragma once
/// AArch64 CPU targets: AArch64's CpuMachine (target/cpu.h). The extension families opforge names,
/// the levels armv8-a (baseline: FP and Advanced SIMD, i.e. NEON), armv8.2-a (+ LSE atomics,
/// CRC32, RDM), armv8.4-a (+ dot product, complex numbers, JSCVT) and armv9-a (+ FP16, FP16FML,
/// FRINTTS, SVE, SVE2), as gcc's -march=NAME enables them, and a few named CPUs (Neoverse N1, V1,
/// and V2, the Grace CPU of GH200/GB200). Pure data, below recipe/, compiler/ and wheel/.
#include "target/cpu.h"

namespace opforge::target {

/// AArch64's table (platform "aarch64").
const CpuMachine& arm_machine();

}  // namespace opforge::target
