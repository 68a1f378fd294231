#pragma once
/// x86-64 instruction-set use: which extensions the executable code of an ELF file uses (decoded
/// with Zydis, section by section), the psABI levels x86-64 / -v2 / -v3 / -v4, the CPU targets a
/// recipe may pin (those levels and a few gcc -march names), and the check of one against the other.
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace opforge::wheel {

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

/// How one file uses one family.
struct FamilyUse {
  std::string family;
  int level = 0;
  std::uint64_t count = 0;          ///< instructions of this family
  std::uint64_t first_address = 0;  ///< virtual address (offset in its section for a .o)
  std::string first_mnemonic;       ///< "vfmadd231ps"
  std::string first_symbol;         ///< the function holding it, when a symbol says so
};

struct IsaUse {
  /// false when the file is not x86-64 code (nothing decoded; `why` says what it is).
  bool analysed = false;
  std::string why;
  int level = 1;                    ///< highest level any family needs (1 = baseline)
  std::vector<FamilyUse> families;  ///< beyond the baseline: by level, then name; level-0 last
  std::uint64_t instructions = 0;   ///< decoded in executable sections
  std::uint64_t undecodable = 0;    ///< bytes skipped (data or padding inside code)
  /// "x86-64-v3", with " + AES, PCLMULQDQ" for families in no level.
  std::string summary() const;
};

/// Decodes every executable (SHF_EXECINSTR) section of an ELF file. bad_input when not ELF.
Result<IsaUse> read_isa(std::string_view elf_bytes);

/// A CPU the code must run on: what `-march=` becomes and which families it allows.
struct CpuTarget {
  std::string name;                ///< as the recipe says: "x86-64-v3", "skylake-avx512"
  int level = 1;                   ///< the psABI level it covers
  std::set<std::string> families;  ///< every family allowed (the level's and the CPU's own)
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

/// The families `use` holds that `target` does not allow and `allowed` does not cover.
std::vector<FamilyUse> above_target(const IsaUse& use, const CpuTarget& target,
                                    const std::set<std::string>& allowed = {});

/// What may exceed the target in one file: code whose SIMD path is chosen at run time.
struct IsaAllowance {
  bool everything = false;         ///< `[build] cpu_dispatch` names the file
  std::set<std::string> families;  ///< e.g. from an op's per-file -mavx512f flags
  std::string why;                 ///< shown in the report ("[build] cpu_dispatch")
};

/// One file's check against the target.
struct IsaCheck {
  std::string path;
  IsaUse use;
  std::vector<FamilyUse> above;       ///< not allowed: each one fails the build
  std::vector<FamilyUse> dispatched;  ///< above the target but allowed
  std::string why_allowed;
};

/// Checks every ELF among `files` (wheel path → bytes) against `target`; `allowance(path)` says
/// what a file may use beyond it. Files that are not ELF are skipped; bad_input for a broken ELF.
Result<std::vector<IsaCheck>> check_cpu_target(const std::vector<std::pair<std::string, std::string_view>>& files,
                                               const CpuTarget& target,
                                               const std::function<IsaAllowance(const std::string&)>& allowance);

/// failed naming each file, family, count and first instruction above the target; success when
/// no check has any.
Status require_cpu_target(const std::vector<IsaCheck>& checks, const CpuTarget& target);

/// "AVX-512F (2246, first vfmadd231ps at 0x1a40 in adam_step_avx512)".
std::string describe_use(const FamilyUse& use);

}  // namespace opforge::wheel
