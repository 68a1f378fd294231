#pragma once
/// Instruction-set use: which extensions the executable code of an ELF file uses (x86-64 decoded
/// with Zydis, AArch64 classified word by word, section by section), and its check against a CPU
/// target (target/cpu.h) of the same machine.
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "target/x86.h"
#include "util/error.h"

namespace opforge::wheel {

/// How one file uses one family.
struct FamilyUse {
  std::string family;
  int level = 0;
  std::uint64_t count = 0;          ///< instructions of this family
  std::uint64_t first_address = 0;  ///< virtual address (offset in its section for a .o)
  std::string first_mnemonic;       ///< "vfmadd231ps"
  std::string first_symbol;         ///< the function holding it, when a symbol says so
  /// Dispatched code only: how it is known to run only where the CPU has the family
  /// (is_dispatched_section, is_dispatch_clone).
  std::string dispatch{};
};

/// The section our own ops put code in that runs only after a run-time CPU check
/// (src/kernels/utils/dispatch.h: OPFORGE_DISPATCHED); any section whose name starts so.
inline constexpr std::string_view kDispatchSection = "opforge_dispatch";
bool is_dispatched_section(std::string_view section_name);

/// A function-multiversioning clone, which the ifunc resolver gcc and clang add picks only on a
/// CPU that has its features (target_clones, or target("...") versions): "f.avx2", "f.avx2.0",
/// "f.arch_x86_64_v4", "f.arch_x86-64-v4.1"; never "f.default", "f.resolver", "f.ifunc".
bool is_dispatch_clone(std::string_view symbol);

struct IsaUse {
  /// false when the file is code of no machine opforge reads (nothing decoded; `why` says what).
  bool analysed = false;
  std::string why;
  /// The machine the code is for (target::Platform::name): its levels and families are the ones
  /// of target::cpu_machine(platform).
  std::string platform = "x86_64";
  /// Highest level of `platform` the code that runs on every CPU needs (1 = baseline): code
  /// reached only through run-time dispatch (`dispatched`) does not count.
  int level = 1;
  std::vector<FamilyUse> families;  ///< beyond the baseline: by level, then name; level-0 last
  /// Families used only by dispatched code (same order); a CPU without them never runs it.
  std::vector<FamilyUse> dispatched{};
  std::uint64_t instructions = 0;  ///< decoded in executable sections
  std::uint64_t undecodable = 0;   ///< bytes skipped (data or padding inside code)
  /// "x86-64-v3", with " + AES, PCLMULQDQ" for families in no level, and "; dispatched at run
  /// time: AVX2, AVX-512F" when some code is ("armv8-a; dispatched at run time: SVE").
  std::string summary() const;
  /// The name of `level` on `platform`: "x86-64-v3", "armv9-a".
  std::string level_name() const;
};

/// Decodes every executable (SHF_EXECINSTR) section of an ELF file. bad_input when not ELF.
Result<IsaUse> read_isa(std::string_view elf_bytes);

/// The families `use` holds that `target` does not allow and `allowed` does not cover.
std::vector<FamilyUse> above_target(const IsaUse& use, const target::CpuTarget& target,
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
/// what a file may use beyond it. Files that are not ELF are skipped; bad_input for a broken ELF
/// and for code of another machine than the target's.
Result<std::vector<IsaCheck>> check_cpu_target(const std::vector<std::pair<std::string, std::string_view>>& files,
                                               const target::CpuTarget& target,
                                               const std::function<IsaAllowance(const std::string&)>& allowance);

/// failed naming each file, family, count and first instruction above the target; success when
/// no check has any.
Status require_cpu_target(const std::vector<IsaCheck>& checks, const target::CpuTarget& target);

/// "AVX-512F (2246, first vfmadd231ps at 0x1a40 in adam_step_avx512)".
std::string describe_use(const FamilyUse& use);

}  // namespace opforge::wheel
