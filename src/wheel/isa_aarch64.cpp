// A64 encodings, from the Arm Architecture Reference Manual's encoding index (DDI 0487): every
// instruction is one 32-bit word, so a family is a set of (mask, value) patterns on its bits.
//
// SVE and SVE2 share one encoding space (bits[28:25] = 0b0010); which of its words need SVE2 is
// the table kSve2 below, a decision tree over the space's field bits (31:29, 24:10, 4) fitted to
// binutils 2.40: random words of the space disassembled by aarch64-linux-gnu-objdump and
// reassembled by aarch64-linux-gnu-as with -march=armv8-a+sve (an SVE2 instruction is refused)
// and with +sve2. On fresh random samples it classifies every word but CTERMEQ/CTERMNE as binutils
// does (25,000 words a sample); those two are SVE (kSveOnly). tests/wheel_isa_arm_test.cpp checks
// both with real compilers' code.
#include "wheel/isa_aarch64.h"

#include <array>

namespace opforge::wheel {
namespace {

struct Pattern {
  std::uint32_t mask, value;
  bool matches(std::uint32_t w) const { return (w & mask) == value; }
};

constexpr std::array<Pattern, 28> kSve2{{
    {0xe03fc000, 0x00068000}, {0xe03dc000, 0x000c8000}, {0xe035c000, 0x00058000}, {0xe1e0e000, 0x01a00000},
    {0xe160e000, 0x01600000}, {0xe120ec00, 0x00202800}, {0xe120e400, 0x00202400}, {0xe120e000, 0x00206000},
    {0xe120f800, 0x01202800}, {0xe12dc000, 0x012d8000}, {0xe100f800, 0x41000000}, {0xe000f800, 0x40002000},
    {0xe000d800, 0x40008000}, {0xe0005800, 0x40004000}, {0xe0001800, 0x40000800}, {0xe0001000, 0x40001000},
    {0xe1388000, 0x60088000}, {0xe1308000, 0x60108000}, {0xe1e08000, 0x61008000}, {0xe120c400, 0x60204000},
    {0xe1208400, 0x21200000}, {0xe120c400, 0x60204400}, {0xe1208000, 0x60208000}, {0xa060c000, 0x80008000},
    {0xe060e000, 0xe0002000}, {0xe060c000, 0xa0200000}, {0xa040c000, 0xa0400000}, {0xe060e000, 0xc000c000},
}};

constexpr Pattern kSveOnly[] = {
    {0xffa0fc0f, 0x25a02000},  // CTERMEQ, CTERMNE
};

struct FamilyPatterns {
  std::string_view family;
  std::array<Pattern, 7> patterns;  // unused slots are {0, 1}: they match nothing
};

constexpr Pattern kNone{0, 1};

// Outside the SVE space. Each pattern is one instruction class of the manual.
constexpr FamilyPatterns kFamilies[] = {
    // Atomic memory operations (LDADD, SWP ...; not LDAPR, RCPC's), CAS, CASP.
    {"LSE",
     {{{0x3f200c00, 0x38200000}, {0x3fa07c00, 0x08a07c00}, {0xbfa07c00, 0x08207c00}, kNone, kNone, kNone, kNone}}},
    {"CRC32", {{{0x7fe0e000, 0x1ac04000}, kNone, kNone, kNone, kNone, kNone, kNone}}},
    // SQRDMLAH/SQRDMLSH: vector, scalar, by element.
    {"RDM",
     {{{0xbf20f400, 0x2e008400}, {0xff20f400, 0x7e008400}, {0xbf00d400, 0x2f00d000}, kNone, kNone, kNone, kNone}}},
    // SDOT/UDOT: vector, by element.
    {"DotProd", {{{0x9fe0fc00, 0x0e809400}, {0x9fc0f400, 0x0f80e000}, kNone, kNone, kNone, kNone, kNone}}},
    // FCMLA, FCADD (vector), FCMLA (by element).
    {"FCMA",
     {{{0xbf20e400, 0x2e00c400}, {0xbf20ec00, 0x2e00e400}, {0xbf009400, 0x2f001000}, kNone, kNone, kNone, kNone}}},
    {"JSCVT", {{{0xfffffc00, 0x1e7e0000}, kNone, kNone, kNone, kNone, kNone, kNone}}},
    // FRINT32/64 X/Z: scalar, vector.
    {"FRINTTS", {{{0xffbe7c00, 0x1e284000}, {0x9fbfec00, 0x0e21e800}, kNone, kNone, kNone, kNone, kNone}}},
    // BFCVT, BFCVTN/N2, BFDOT, BFMMLA, BFMLALB/T, BFDOT and BFMLALB/T by element.
    {"BF16",
     {{{0xfffffc00, 0x1e634000},
       {0xbffffc00, 0x0ea16800},
       {0xbfe0fc00, 0x2e40fc00},
       {0xffe0fc00, 0x6e40ec00},
       {0xbfe0fc00, 0x2ec0fc00},
       {0xbfc0f400, 0x0f40f000},
       {0xbfc0f400, 0x0fc0f000}}}},
    // SMMLA, UMMLA, USMMLA, USDOT (vector), USDOT/SUDOT (by element).
    {"I8MM",
     {{{0xffe0fc00, 0x4e80a400},
       {0xffe0fc00, 0x6e80a400},
       {0xffe0fc00, 0x4e80ac00},
       {0xbfe0fc00, 0x0e809c00},
       {0xbfc0f400, 0x0f00f000},
       {0xbfc0f400, 0x0f80f000},
       kNone}}},
    // Half-precision arithmetic: Advanced SIMD three same and two-register misc (FP16), scalar
    // three same (FP16), and scalar FP data processing with ftype = half.
    {"FP16",
     {{{0x9f60c400, 0x0e400400},
       {0x9f7e0c00, 0x0e780800},
       {0xdf60c400, 0x5e400400},
       {0xdf7e0c00, 0x5e780800},
       {0xffe00000, 0x1ee00000},
       kNone,
       kNone}}},
};

/// FCVT between half and single or double precision: ftype = half but armv8-a's own.
constexpr Pattern kFcvtFromHalf{0xfffe7c00, 0x1ee24000};

bool any(const Pattern* begin, const Pattern* end, std::uint32_t w) {
  for (const Pattern* p = begin; p != end; ++p)
    if (p->matches(w)) return true;
  return false;
}

}  // namespace

bool aarch64_unallocated(std::uint32_t w) {
  const std::uint32_t op1 = (w >> 25) & 0xf;
  return op1 == 0b0001 || op1 == 0b0011 || (op1 == 0b0000 && !(w >> 31));
}

std::string_view aarch64_family(std::uint32_t w) {
  const std::uint32_t op1 = (w >> 25) & 0xf;
  if (op1 == 0b0010) {
    if (any(std::begin(kSveOnly), std::end(kSveOnly), w)) return "SVE";
    return any(kSve2.begin(), kSve2.end(), w) ? "SVE2" : "SVE";
  }
  if (op1 == 0b0000) return (w >> 31) ? "SME" : "";
  if (kFcvtFromHalf.matches(w)) return "";
  // RCPC's LDAPR sits among the atomic memory operations (o3 = 1, opc = 100).
  if ((w & 0x3f20fc00) == 0x3820c000) return "";
  for (const auto& f : kFamilies)
    if (any(f.patterns.begin(), f.patterns.end(), w)) return f.family;
  return "";
}

}  // namespace opforge::wheel
