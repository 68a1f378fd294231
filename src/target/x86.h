#pragma once
/// x86-64 CPU targets: the extension families opforge names, the psABI levels x86-64 / -v2 / -v3 /
/// -v4 (x86-64-v2: SSE3, SSSE3, SSE4.1, SSE4.2, POPCNT, CMPXCHG16B, LAHF/SAHF; -v3: AVX, AVX2,
/// BMI1, BMI2, F16C, FMA, LZCNT, MOVBE, XSAVE; -v4: AVX-512F, BW, CD, DQ, VL, as gcc's
/// -march=x86-64-vN follows them), the CPU targets a recipe may pin (those levels and a few gcc
/// -march names), and the families gcc flags imply. Pure data, below recipe/, compiler/ and wheel/.
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace opforge::target {

/// An extension family as users and gcc know it ("SSE4.2", "AVX2", "AVX-512F").
struct IsaFamily {
  std::string_view name;
  /// The psABI level that first requires it (2, 3, 4); 0 for a family in no level (AES, SHA...),
  /// which a level target does not allow.
  int level = 0;
  std::string_view gcc_macro;  ///< what gcc defines when it may emit the family ("__AVX2__")
};

/// Every family opforge names, in level order (v2, v3, v4, then the ones in no level).
std::span<const IsaFamily> isa_families();

/// "x86-64" for 1, "x86-64-v2" ... "x86-64-v4".
std::string level_name(int level);

/// The family called `name`; nullptr when opforge does not name it.
const IsaFamily* find_family(std::string_view name);

/// A CPU the code must run on: what `-march=` becomes and which families it allows.
struct CpuTarget {
  std::string name;                ///< as the recipe says: "x86-64-v3", "skylake-avx512"
  int level = 1;                   ///< the psABI level it covers
  std::set<std::string> families;  ///< every family allowed (the level's and the CPU's own)
  /// A psABI level ("x86-64-v3"), not a named CPU.
  bool is_level() const { return name == level_name(level); }
  bool allows(std::string_view family) const { return families.contains(std::string(family)); }
};

/// The values `cpu_target` accepts, in the order shown to users.
std::vector<std::string> cpu_target_names();

/// The target called `name`; nullopt when opforge does not know it ("native" included: a target
/// is a CPU the wheel must run on, not the build machine's).
std::optional<CpuTarget> find_cpu_target(std::string_view name);

/// Families that gcc flags such as -mavx2, -mavx512f or -march=haswell let the compiler emit (a
/// flag implies what gcc makes it imply: -mavx2 → AVX, AVX2). Flags that are not ISA flags are
/// ignored.
std::set<std::string> families_of_flags(const std::vector<std::string>& flags);

}  // namespace opforge::target
