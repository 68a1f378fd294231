// The families each name enables are what the Debian aarch64-linux-gnu-gcc 12 defines for it
// (`aarch64-linux-gnu-gcc -march=NAME -dM -E`), which tests/wheel_isa_arm_test.cpp checks against
// that gcc when it is installed. Extensions gcc 12 does not announce with a macro (RCPC, crypto)
// are not named.
#include "target/arm.h"

#include <array>
#include <map>

namespace opforge::target {
namespace {

constexpr std::array<IsaFamily, 18> kArmFamilies{{
    {"LSE", 2, "__ARM_FEATURE_ATOMICS"},
    {"CRC32", 2, "__ARM_FEATURE_CRC32"},
    {"RDM", 2, "__ARM_FEATURE_QRDMX"},
    {"DotProd", 3, "__ARM_FEATURE_DOTPROD"},
    {"FCMA", 3, "__ARM_FEATURE_COMPLEX"},
    {"JSCVT", 3, "__ARM_FEATURE_JCVT"},
    {"FP16", 4, "__ARM_FEATURE_FP16_VECTOR_ARITHMETIC"},
    {"FP16FML", 4, "__ARM_FEATURE_FP16_FML"},
    {"FRINTTS", 4, "__ARM_FEATURE_FRINT"},
    {"SVE", 4, "__ARM_FEATURE_SVE"},
    {"SVE2", 4, "__ARM_FEATURE_SVE2"},
    {"BF16", 0, "__ARM_FEATURE_BF16_VECTOR_ARITHMETIC"},
    {"I8MM", 0, "__ARM_FEATURE_MATMUL_INT8"},
    {"SVE2-BITPERM", 0, "__ARM_FEATURE_SVE2_BITPERM"},
    {"RNG", 0, "__ARM_FEATURE_RNG"},
    {"MTE", 0, "__ARM_FEATURE_MEMORY_TAGGING"},
    {"SVE2-AES", 0, "__ARM_FEATURE_SVE2_AES"},
    {"SME", 0, "__ARM_FEATURE_SME"},
}};

constexpr std::string_view kArmLevels[] = {"armv8-a", "armv8.2-a", "armv8.4-a", "armv9-a"};

// gcc names CPUs only in -mcpu= (and gcc 12 knows no neoverse-v2), so each CPU's `arch` is the
// architecture plus its extensions, which every gcc that knows the architecture accepts.
const std::vector<NamedCpu>& arm_named_cpus() {
  static const std::vector<NamedCpu> cpus = {
      // AWS Graviton2, Ampere Altra: Armv8.2-A with FP16, dot product (and RCPC).
      {"neoverse-n1", 2, {"FP16", "DotProd"}, "armv8.2-a+fp16+dotprod+rcpc", {}},
      // AWS Graviton3: Armv8.4-A with 256-bit SVE, BF16, I8MM.
      {"neoverse-v1", 3, {"FP16", "FP16FML", "SVE", "BF16", "I8MM", "RNG"}, "armv8.4-a+sve+fp16fml+bf16+i8mm+rng", {}},
      // NVIDIA Grace (GH200, GB200): Armv9.0-A with 128-bit SVE2, BF16, I8MM, SVE2 bit permutes.
      // gcc 12 has no neoverse-v2 tuning: its nearest, neoverse-n2 (also Armv9.0-A).
      {"neoverse-v2",
       4,
       {"BF16", "I8MM", "SVE2-BITPERM", "RNG", "MTE"},
       "armv9-a+bf16+i8mm+sve2-bitperm+rng+memtag",
       "neoverse-n2"},
  };
  return cpus;
}

/// "+ext" of -march/-mcpu → the families gcc turns on with it (gcc/config/aarch64/
/// aarch64-option-extensions.def: sve implies fp16, sve2 implies sve, fp16fml implies fp16).
const std::map<std::string, std::vector<std::string>, std::less<>>& extensions() {
  static const std::map<std::string, std::vector<std::string>, std::less<>> ext = {
      {"lse", {"LSE"}},
      {"crc", {"CRC32"}},
      {"rdma", {"RDM"}},
      {"dotprod", {"DotProd"}},
      {"fp16", {"FP16"}},
      {"fp16fml", {"FP16", "FP16FML"}},
      {"sve", {"FP16", "SVE"}},
      {"sve2", {"FP16", "SVE", "SVE2"}},
      {"sve2-bitperm", {"FP16", "SVE", "SVE2", "SVE2-BITPERM"}},
      {"sve2-aes", {"FP16", "SVE", "SVE2", "SVE2-AES"}},
      {"bf16", {"BF16"}},
      {"i8mm", {"I8MM"}},
      {"rng", {"RNG"}},
      {"memtag", {"MTE"}},
  };
  return ext;
}

/// The families of "armv8.2-a+sve+nofp16"'s base ("armv8.2-a" or a CPU name), then each "+ext"
/// (or "+noext": the extension's own family removed) in order.
std::set<std::string> families_of_arch(std::string_view value) {
  std::set<std::string> out;
  auto plus = value.find('+');
  auto base = find_cpu_target(value.substr(0, plus));
  if (!base || base->platform != "aarch64") return out;
  out = base->families;
  while (plus != std::string_view::npos) {
    auto next = value.find('+', plus + 1);
    std::string_view ext = value.substr(plus + 1, next == std::string_view::npos ? next : next - plus - 1);
    plus = next;
    bool off = ext.starts_with("no");
    auto it = extensions().find(off ? ext.substr(2) : ext);
    if (it == extensions().end()) continue;
    if (!off) out.insert(it->second.begin(), it->second.end());
    else out.erase(it->second.back());
  }
  return out;
}

std::set<std::string> arm_families_of_flags(const std::vector<std::string>& flags) {
  std::set<std::string> out;
  for (const auto& flag : flags) {
    std::string_view f = flag;
    for (std::string_view prefix : {"-march=", "-mcpu="})
      if (f.starts_with(prefix)) out.merge(families_of_arch(f.substr(prefix.size())));
  }
  return out;
}

}  // namespace

const CpuMachine& arm_machine() {
  static const CpuMachine machine{"aarch64", kArmFamilies, kArmLevels, arm_named_cpus(), arm_families_of_flags, true};
  return machine;
}

}  // namespace opforge::target
