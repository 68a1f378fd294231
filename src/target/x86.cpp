// The gcc -march names below list what gcc 12 defines for them (`gcc -march=NAME -dM -E`), which
// tests/wheel_isa_test.cpp checks against the real gcc.
#include "target/x86.h"

#include <array>
#include <cctype>
#include <map>

namespace opforge::target {
namespace {

constexpr std::array<IsaFamily, 45> kFamilies{{
    {"SSE3", 2, "__SSE3__"},
    {"SSSE3", 2, "__SSSE3__"},
    {"SSE4.1", 2, "__SSE4_1__"},
    {"SSE4.2", 2, "__SSE4_2__"},
    {"POPCNT", 2, "__POPCNT__"},
    {"CX16", 2, "__GCC_HAVE_SYNC_COMPARE_AND_SWAP_16"},
    {"LAHF-SAHF", 2, "__LAHF_SAHF__"},
    {"AVX", 3, "__AVX__"},
    {"AVX2", 3, "__AVX2__"},
    {"BMI1", 3, "__BMI__"},
    {"BMI2", 3, "__BMI2__"},
    {"F16C", 3, "__F16C__"},
    {"FMA", 3, "__FMA__"},
    {"LZCNT", 3, "__LZCNT__"},
    {"MOVBE", 3, "__MOVBE__"},
    {"XSAVE", 3, "__XSAVE__"},
    {"AVX-512F", 4, "__AVX512F__"},
    {"AVX-512BW", 4, "__AVX512BW__"},
    {"AVX-512CD", 4, "__AVX512CD__"},
    {"AVX-512DQ", 4, "__AVX512DQ__"},
    {"AVX-512VL", 4, "__AVX512VL__"},
    {"AES", 0, "__AES__"},
    {"PCLMULQDQ", 0, "__PCLMUL__"},
    {"SHA", 0, "__SHA__"},
    {"RDRAND", 0, "__RDRND__"},
    {"RDSEED", 0, "__RDSEED__"},
    {"ADX", 0, "__ADX__"},
    {"FSGSBASE", 0, "__FSGSBASE__"},
    {"XSAVEOPT", 0, "__XSAVEOPT__"},
    {"XSAVEC", 0, "__XSAVEC__"},
    {"XSAVES", 0, "__XSAVES__"},
    {"CLFLUSHOPT", 0, "__CLFLUSHOPT__"},
    {"CLWB", 0, "__CLWB__"},
    {"PKU", 0, "__PKU__"},
    {"RDPID", 0, "__RDPID__"},
    {"GFNI", 0, "__GFNI__"},
    {"VAES", 0, "__VAES__"},
    {"VPCLMULQDQ", 0, "__VPCLMULQDQ__"},
    {"AVX-VNNI", 0, "__AVXVNNI__"},
    {"AVX-512VNNI", 0, "__AVX512VNNI__"},
    {"AVX-512VBMI", 0, "__AVX512VBMI__"},
    {"AVX-512VBMI2", 0, "__AVX512VBMI2__"},
    {"AVX-512IFMA", 0, "__AVX512IFMA__"},
    {"AVX-512BITALG", 0, "__AVX512BITALG__"},
    {"AVX-512VPOPCNTDQ", 0, "__AVX512VPOPCNTDQ__"},
}};

}  // namespace

const IsaFamily* find_family(std::string_view name) { return find_family("x86_64", name); }

namespace {

constexpr std::string_view kLevels[] = {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};

// gcc 12's -march names whose families make a level plus extras (gcc -march=NAME -dM -E).
const std::vector<NamedCpu>& named_cpus() {
  static const std::vector<NamedCpu> cpus = {
      // gcc 12's haswell and broadwell leave AES out (only skylake and later have it).
      {"haswell", 3, {"PCLMULQDQ", "RDRAND", "FSGSBASE", "XSAVEOPT"}},
      {"broadwell", 3, {"PCLMULQDQ", "RDRAND", "FSGSBASE", "XSAVEOPT", "RDSEED", "ADX"}},
      {"skylake",
       3,
       {"AES", "PCLMULQDQ", "RDRAND", "FSGSBASE", "XSAVEOPT", "RDSEED", "ADX", "CLFLUSHOPT", "XSAVEC", "XSAVES"}},
      {"skylake-avx512",
       4,
       {"AES", "PCLMULQDQ", "RDRAND", "FSGSBASE", "XSAVEOPT", "RDSEED", "ADX", "CLFLUSHOPT", "XSAVEC", "XSAVES", "CLWB",
        "PKU"}},
      {"cascadelake",
       4,
       {"AES", "PCLMULQDQ", "RDRAND", "FSGSBASE", "XSAVEOPT", "RDSEED", "ADX", "CLFLUSHOPT", "XSAVEC", "XSAVES", "CLWB",
        "PKU", "AVX-512VNNI"}},
      {"icelake-server", 4, {"AES",         "PCLMULQDQ",     "RDRAND",          "FSGSBASE",    "XSAVEOPT",
                             "RDSEED",      "ADX",           "CLFLUSHOPT",      "XSAVEC",      "XSAVES",
                             "CLWB",        "PKU",           "AVX-512VNNI",     "SHA",         "RDPID",
                             "GFNI",        "VAES",          "VPCLMULQDQ",      "AVX-512VBMI", "AVX-512VBMI2",
                             "AVX-512IFMA", "AVX-512BITALG", "AVX-512VPOPCNTDQ"}},
      {"znver2",
       3,
       {"AES", "PCLMULQDQ", "RDRAND", "FSGSBASE", "XSAVEOPT", "RDSEED", "ADX", "CLFLUSHOPT", "XSAVEC", "XSAVES", "SHA",
        "CLWB", "RDPID"}},
      {"znver3",
       3,
       {"AES", "PCLMULQDQ", "RDRAND", "FSGSBASE", "XSAVEOPT", "RDSEED", "ADX", "CLFLUSHOPT", "XSAVEC", "XSAVES", "SHA",
        "CLWB", "RDPID", "VAES", "VPCLMULQDQ", "PKU"}},
  };
  return cpus;
}

/// An x86-64 target by name (levels and named CPUs), for -march=NAME among the flags.
std::optional<CpuTarget> find_x86_target(std::string_view name) {
  auto t = find_cpu_target(name);
  if (t && t->platform == "x86_64") return t;
  return std::nullopt;
}

std::set<std::string> x86_families_of_flags(const std::vector<std::string>& flags) {
  // gcc's implications (gcc/common/config/i386/i386-common.cc, OPTION_MASK_ISA_*_SET): each
  // SSE/AVX level implies the ones below it; AVX-512 subsets imply AVX-512F.
  using L = std::vector<std::string>;
  const L sse42 = {"SSE3", "SSSE3", "SSE4.1", "SSE4.2", "POPCNT"};
  const L avx = {"SSE3", "SSSE3", "SSE4.1", "SSE4.2", "POPCNT", "AVX", "XSAVE"};
  auto plus = [](L base, std::initializer_list<std::string> more) {
    base.insert(base.end(), more);
    return base;
  };
  const std::map<std::string, L, std::less<>> kFlags = {
      {"sse3", {"SSE3"}},
      {"ssse3", {"SSE3", "SSSE3"}},
      {"sse4.1", {"SSE3", "SSSE3", "SSE4.1"}},
      {"sse4.2", sse42},
      {"sse4", sse42},
      {"popcnt", {"POPCNT"}},
      {"cx16", {"CX16"}},
      {"sahf", {"LAHF-SAHF"}},
      {"avx", avx},
      {"avx2", plus(avx, {"AVX2"})},
      {"fma", plus(avx, {"FMA"})},
      {"f16c", plus(avx, {"F16C"})},
      {"bmi", {"BMI1"}},
      {"bmi2", {"BMI2"}},
      {"lzcnt", {"LZCNT"}},
      {"movbe", {"MOVBE"}},
      {"xsave", {"XSAVE"}},
      {"aes", {"AES"}},
      {"pclmul", {"PCLMULQDQ"}},
  };
  std::set<std::string> out;
  for (const auto& flag : flags) {
    if (flag.starts_with("-march=")) {
      if (auto t = find_x86_target(std::string_view(flag).substr(7)))
        out.insert(t->families.begin(), t->families.end());
      continue;
    }
    if (!flag.starts_with("-m")) continue;
    std::string_view name = std::string_view(flag).substr(2);
    if (auto it = kFlags.find(name); it != kFlags.end()) {
      out.insert(it->second.begin(), it->second.end());
    } else if (name.starts_with("avx512")) {
      // -mavx512f → AVX-512F; -mavx512vl → AVX-512VL; each implies AVX-512F and AVX2.
      std::string sub(name.substr(6));
      for (auto& c : sub) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      out.insert("AVX-512" + sub);
      out.insert("AVX-512F");
      const auto avx2 = kFlags.find("avx2")->second;
      out.insert(avx2.begin(), avx2.end());
    }
  }
  return out;
}

}  // namespace

const CpuMachine& x86_machine() {
  static const CpuMachine machine{"x86_64", kFamilies, kLevels, named_cpus(), x86_families_of_flags, false};
  return machine;
}

std::span<const IsaFamily> isa_families() { return kFamilies; }

std::string level_name(int level) { return level <= 1 ? "x86-64" : "x86-64-v" + std::to_string(level); }

}  // namespace opforge::target
