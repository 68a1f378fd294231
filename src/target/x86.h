#pragma once
/// x86-64 CPU targets: the extension families opforge names, the psABI levels x86-64 / -v2 / -v3 /
/// -v4 (x86-64-v2: SSE3, SSSE3, SSE4.1, SSE4.2, POPCNT, CMPXCHG16B, LAHF/SAHF; -v3: AVX, AVX2,
/// BMI1, BMI2, F16C, FMA, LZCNT, MOVBE, XSAVE; -v4: AVX-512F, BW, CD, DQ, VL, as gcc's
/// -march=x86-64-vN follows them), the CPU targets a recipe may pin (those levels and a few gcc
/// -march names), and the families gcc flags imply: x86-64's CpuMachine (target/cpu.h). Pure data,
/// below recipe/, compiler/ and wheel/.
#include <span>
#include <string>
#include <string_view>

#include "target/cpu.h"

namespace opforge::target {

/// x86-64's table (platform "x86_64").
const CpuMachine& x86_machine();

/// Every x86-64 family opforge names, in level order (v2, v3, v4, then the ones in no level).
std::span<const IsaFamily> isa_families();

/// "x86-64" for 1, "x86-64-v2" ... "x86-64-v4".
std::string level_name(int level);

/// The x86-64 family called `name`; nullptr when opforge does not name it.
const IsaFamily* find_family(std::string_view name);

}  // namespace opforge::target
