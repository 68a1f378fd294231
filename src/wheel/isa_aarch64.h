#pragma once
/// AArch64 instruction words classified by encoding: which extension family (target/arm.cpp's
/// names) one fixed 32-bit instruction needs. Used by wheel/isa.cpp for AArch64 ELF files.
#include <cstdint>
#include <string_view>

namespace opforge::wheel {

/// The family `word` (a little-endian A64 instruction, already read as a number) needs beyond
/// armv8-a's FP and Advanced SIMD: "SVE", "SVE2", "SME", "LSE", "CRC32", "RDM", "DotProd", "FCMA",
/// "JSCVT", "FP16", "FRINTTS", "BF16", "I8MM"; empty for baseline code, data and every encoding
/// opforge does not classify (it under-reports rather than refuses code it cannot read).
std::string_view aarch64_family(std::uint32_t word);

/// `word` is in no instruction class (bits[28:25] = 0b0001 or 0b0011), or UDF and the reserved
/// space beside it: data or padding among the code.
bool aarch64_unallocated(std::uint32_t word);

}  // namespace opforge::wheel
