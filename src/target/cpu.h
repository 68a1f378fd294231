#pragma once
/// CPU targets of every machine behind one seam. Each machine opforge builds for (target/platform.h)
/// describes its CPUs in one CpuMachine table — its extension families, its levels (each level
/// allows all the families of the levels below it), its named CPUs and the gcc flags for them:
/// x86-64 in target/x86.cpp, AArch64 in target/arm.cpp. The functions here look targets, families
/// and flags up across those tables, so a new machine is a table, not if-branches around the code.
/// Pure data, below recipe/, compiler/ and wheel/.
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace opforge::target {

/// An extension family as users and gcc know it ("SSE4.2", "AVX2", "AVX-512F"; "SVE", "FP16").
struct IsaFamily {
  std::string_view name;
  /// The machine's level that first requires it (x86-64: 2..4; AArch64: 2 armv8.2-a ...); 0 for
  /// a family in no level (AES, SHA...), which a level target does not allow.
  int level = 0;
  std::string_view gcc_macro;  ///< what gcc defines when it may emit the family ("__AVX2__")
};

/// A named CPU of a machine: a level plus the families it adds.
struct NamedCpu {
  std::string_view name;
  int level = 1;
  std::vector<std::string_view> extra;  ///< families beyond the level
  /// What `-march=` gets for it where that is not the name (AArch64: gcc names CPUs only in
  /// -mcpu=, and gcc 12 knows no neoverse-v2, so the architecture with its extensions).
  std::string_view arch{};
  /// What `-mtune=` gets; empty: the name.
  std::string_view tune{};
};

/// One machine's CPU vocabulary (see the file comment).
struct CpuMachine {
  std::string_view platform;  ///< target::Platform::name: "x86_64", "aarch64"
  std::span<const IsaFamily> families;
  std::span<const std::string_view> levels;  ///< level 1's name first ("x86-64", "armv8-a")
  std::span<const NamedCpu> cpus;
  /// The families the machine's gcc flags let the compiler emit (-mavx2; -march=armv8.2-a+sve).
  /// Flags of other machines and flags that are not ISA flags are ignored.
  std::set<std::string> (*families_of_flags)(const std::vector<std::string>& flags);
  /// What gcc's -mcpu= means here: on x86-64 an alias of -mtune= (false); on AArch64 the
  /// architecture and the tuning at once, -march= plus -mtune= (true).
  bool mcpu_sets_arch = false;
};

/// Every machine's table, x86-64 first.
std::span<const CpuMachine* const> cpu_machines();

/// The table of `platform`; nullptr for a machine opforge has no CPU table for.
const CpuMachine* cpu_machine(std::string_view platform);

/// A CPU the code must run on: what `-march=` becomes and which families it allows.
struct CpuTarget {
  std::string name;                ///< as the recipe says: "x86-64-v3", "skylake-avx512", "armv8.2-a"
  int level = 1;                   ///< the machine's level it covers
  std::set<std::string> families;  ///< every family allowed (the level's and the CPU's own)
  /// The machine it is a CPU of (target::Platform::name). A recipe for another machine cannot pin it.
  std::string platform = "x86_64";
  std::string arch{};      ///< what `-march=` gets: the name, or NamedCpu::arch
  std::string tune{};      ///< what `-mtune=` gets: "generic" for a level, else the CPU's tuning
  bool named_cpu = false;  ///< a NamedCpu, not a level
  /// A level ("x86-64-v3", "armv8.2-a"), not a named CPU.
  bool is_level() const { return !named_cpu; }
  bool allows(std::string_view family) const { return families.contains(std::string(family)); }
};

/// The values `cpu_target` accepts, in the order shown to users: every machine's (x86-64 first),
/// or, with `platform`, that machine's only (none for an unknown one).
std::vector<std::string> cpu_target_names();
std::vector<std::string> cpu_target_names(std::string_view platform);

/// The target called `name`, of whichever machine names it; nullopt when opforge does not know it
/// ("native" included: a target is a CPU the wheel must run on, not the build machine's).
std::optional<CpuTarget> find_cpu_target(std::string_view name);

/// The families of `platform` in its table's order (empty for an unknown machine).
std::span<const IsaFamily> isa_families(std::string_view platform);

/// The family `name` of `platform`; nullptr when that machine does not name it.
const IsaFamily* find_family(std::string_view platform, std::string_view name);

/// The name of `platform`'s level `level` ("x86-64-v3", "armv8.2-a"); levels below 1 are level 1's
/// name, above the last the last's; empty for an unknown machine.
std::string level_name(std::string_view platform, int level);

/// Families that gcc flags let the compiler emit, on any machine: -mavx2 → AVX, AVX2;
/// -march=armv8.2-a+sve → SVE, FP16 ... (the flag spellings of the machines do not overlap).
std::set<std::string> families_of_flags(const std::vector<std::string>& flags);

}  // namespace opforge::target
