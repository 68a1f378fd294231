#pragma once
/// Precompiled torch headers for the host compiles of a command build ([build] pch).
///
/// Nearly every C++ file of a torch extension starts with `#include <torch/extension.h>`, tens of
/// thousands of lines that gcc parses again for every file (about half of such a file's compile).
/// The host wrappers (wrap/wrappers.h) hand each C++ compile (`-c`) to `opforge __host-compile`
/// (host_compile below), which
///   - keeps a compile as it is unless its source reaches `#include <torch/extension.h>` through
///     its own text and the project's quoted headers with only directives before it (a generated
///     `.cudafe1.cpp` of nvcc's host pass never does);
///   - makes, once per (compiler, its flags less the per-file ones and the project's own macros,
///     torch, the directives before the include) and once kMakeAt compiles are known to need it,
///     a precompiled header of those directives and torch/extension.h, in that
///     order, in the cache (`<cache>/pch/<key>/`), under the entry's lock, while other compiles go
///     on without it: a file that includes `<stdio.h>` or `c10/cuda/CUDAStream.h` first gets a
///     header that does too (forced in front of them, torch's header reorders the declarations,
///     and gcc's code with them: measured on DeepSpeed's ops);
///   - compiles with `-include <entry>/extension.h -Winvalid-pch`: gcc uses the `.gch` beside it when
///     its own checks pass (the same compiler, the macros it consulted defined alike, the same
///     -m/-f options), else reads the header as text; the file's own directives then run again,
///     its includes skipped by their guards and its #defines repeating themselves;
///   - refuses a header whose macros torch's headers change (macro_clash): the file's own #define
///     or #undef, read again after the header, would set them back;
///   - compiles again without it when a compile with it fails, and says so;
///   - puts the headers the precompiled one stands for into the compile's -MD/-MMD file, so that
///     ninja and ccache's depend mode see every header as before.
/// The object files are the same bytes as without it (GCC reads the same declarations, and the
/// build's -g0 leaves no debug information that would name the .gch).
///
/// A file each in compile/pch/: the compile line (compile_line.cpp), the include scan
/// (include_scan.cpp), which sources share a header (siblings.cpp), the store entry (entry.cpp),
/// the log and its summary (summary.cpp) and `__host-compile` itself (host_compile.cpp); what they
/// share and nothing else uses is in detail.h.
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "probe/machine.h"
#include "util/error.h"

namespace opforge::compile::pch {

namespace fs = std::filesystem;

/// The header precompiled, as sources include it.
inline constexpr std::string_view kHeader = "torch/extension.h";
/// The internal command the host wrappers run (hidden from `opforge help`).
inline constexpr std::string_view kCommand = "__host-compile";
/// Where each compile's outcome goes, one line each, for the build's summary and record.
inline constexpr std::string_view kLogVariable = "OPFORGE_PCH_LOG";
/// The scratch tree of the build: include folders inside it are the project's own.
inline constexpr std::string_view kTreeVariable = "OPFORGE_PCH_TREE";

/// A compile command line as the host wrapper got it (the arguments after the compiler).
struct CompileLine {
  std::vector<std::string> args;
  std::vector<std::string> sources;                       ///< operands that are not options' values
  std::string output;                                     ///< -o
  std::string depfile;                                    ///< -MF
  enum class Deps { none, all, user } deps = Deps::none;  ///< -MD / -MMD
  std::vector<std::string> include_dirs;                  ///< -I, -iquote, -isystem, -idirafter, in order
  std::vector<std::string> language;                      ///< -x values
  bool compile = false;                                   ///< -c
  bool other_mode = false;  ///< -E, -S, -M, -MM, -fsyntax-only, -save-temps, -include, a PCH of its own
};
CompileLine parse(const std::vector<std::string>& args);

/// Why a compile is kept as it is ("" when it may use a precompiled header).
std::string not_eligible(const CompileLine& c);

/// The arguments the header is made with and keyed by: the compile's own less the per-file ones
/// (-c, -o, the source, -MD/-MMD/-MF/-MT/-MQ/-MP), the warnings (-W…, not -Wp,), link options
/// (-l, -L, -shared, -Wl,), -DTORCH_EXTENSION_NAME (one name per extension, never read by torch's
/// headers) and the include folders inside `tree` (the project's own; `tree` empty: none).
std::vector<std::string> header_args(const CompileLine& c, const fs::path& tree);

/// Whether torch's headers, or the C and C++ libraries' they include, may read a macro of this
/// name: a reserved name (`_X`, `__X`), NDEBUG, or one of torch's, pybind11's, CUDA's and their
/// libraries' prefixes (TORCH_, C10_, AT_, PYBIND11_, USE_, CUDA…). Any other name is the
/// project's own.
bool read_by_headers(std::string_view macro);

/// `args` less the -D and -U of the project's own macros (read_by_headers false), unless gcc has
/// named the macro as one the header read (`consulted`). Such a define cannot change what the
/// header holds, so compiles that differ only in it share one; gcc checks it anyway: a macro the
/// header did read makes it refuse the `.gch` ("not used because `X' is defined"), the compile
/// reads the header as text, and the macro goes into `consulted` for the next key.
std::vector<std::string> without_project_macros(const std::vector<std::string>& args,
                                                const std::set<std::string>& consulted);

/// The macro gcc's -Winvalid-pch reason names: "…: not used because `NDEBUG' is defined" → NDEBUG;
/// "" when it names none.
std::string macro_in_reason(std::string_view reason);

/// The C++ sources a ninja file compiles with the same rule as `source`, `source` among them, in
/// the file's order (torch's BuildExtension writes one build.ninja per extension, every C++ file
/// compiled by rule `compile` with the same flags); empty when it does not compile `source`.
std::vector<std::string> sibling_sources(std::string_view build_ninja, std::string_view source);

/// One extension of the build as opforge knows it before compiling (a DeepSpeed op's constructed
/// extension): its TORCH_EXTENSION_NAME, the flags its C++ files get besides torch's (include
/// folders tree-relative inside the tree, then its cxx args) and its sources (tree-relative).
struct PlannedExtension {
  std::string name;
  std::vector<std::string> args;
  std::vector<std::string> sources;
};
/// The file a build that knows its extensions writes in the scratch tree before compiling, so that
/// the first file of a set shared across extensions already knows the others.
inline constexpr std::string_view kPlanFile = ".opforge-pch-plan.json";
std::string plan_text(const std::vector<PlannedExtension>& extensions);
/// The C++ sources (tree-relative), each with its extension's include folders, of the planned
/// extensions whose flags give the same key as `extension`'s (header_args of their args with the
/// tree's folders left out, less the project's own macros): `extension`'s own among them. Empty
/// when the plan does not name `extension` or cannot be read.
struct PlannedSource {
  std::string source;
  std::vector<std::string> include_dirs;
};
std::vector<PlannedSource> planned_alike(std::string_view plan, std::string_view extension, const fs::path& tree,
                                         const std::set<std::string>& consulted);

/// How many compiles must be known to need a header before it is made: making it costs about one
/// plain compile more than compiling without it, and each later compile saves about half of one
/// (torch 2.15, g++ 12, -O3: 34.6 s to make, 11.1 s to compile with it, 22.8 s without), so it
/// breaks even on the third. Known: the compiles of earlier builds and extensions that wanted it
/// (`.<key>.wanted`), this extension's files with the same directives first (its build.ninja) and,
/// in a build that planned its extensions (kPlanFile), the other extensions' files alike.
inline constexpr std::size_t kMakeAt = 3;

/// The folder among the compile's include folders that holds torch/extension.h; empty when none.
fs::path torch_include_dir(const probe::FileSystem& fs, const CompileLine& c, const fs::path& cwd);

/// The key of the entry: the compiler (path and stamp), header_args, the source's prefix (scan),
/// the torch headers (the folder, its version.py and the header's stamps) and this scheme's version.
/// `args` are header_args less the project's own macros (without_project_macros).
std::string entry_key(const probe::FileSystem& fs, const fs::path& compiler, const std::vector<std::string>& args,
                      const fs::path& torch_dir, const std::vector<std::string>& prefix = {});

/// What a source reads before it reaches the header.
struct SourceScan {
  bool reaches_header = false;      ///< through its text and quoted headers found in `dirs`
  std::vector<std::string> prefix;  ///< the directives before it, in order (the project's headers followed)
  std::set<std::string> macros;     ///< macros the prefix #defines or #undefs
  std::string why_not;              ///< set when it does not reach it where a forced include may stand in
};
/// Reads the source and the quoted headers it includes (found beside the including file, then in
/// `dirs`), depth-first and in order, up to the first `#include <torch/extension.h>`. What comes
/// before it must be directives a header can hold: other includes, #define, #undef and #pragma
/// (kept in `prefix`, in order; include guards and `#pragma once` left out). Code, an #if (an
/// include guard aside) or an include named by a macro before it refuses the file: forced first,
/// the header would reorder the declarations, and gcc's code with them.
/// With `tree` (the build's), nothing is read through a link out of it: a source reached so is not
/// scanned, a header so goes into the prefix as written.
SourceScan scan(const probe::FileSystem& fs, const fs::path& source, const std::vector<fs::path>& dirs,
                const fs::path& tree = {});

/// The header made for a prefix: its lines, then `#include <torch/extension.h>`.
std::string header_text(const std::vector<std::string>& prefix);

/// `#define` lines of a `-E -dM` output, by macro name.
std::map<std::string, std::string> macro_definitions(std::string_view dM);
/// The file's own lines before the include run again after the forced header (its includes are
/// skipped by their guards, its #defines repeat themselves): that is the same only when torch's
/// headers leave every macro the prefix sets as the prefix left it. `prefix_dM`, `header_dM`: the
/// `-E -dM` of the prefix alone and of the made header. "" when they agree, else why not.
std::string macro_clash(std::string_view prefix_dM, std::string_view header_dM, const std::set<std::string>& macros);

/// The compile's dependency file with the precompiled header's dependencies added (its target
/// kept): `header_deps` is the made header's own -MD/-MMD file, less `drop` (the one-line header
/// in the cache entry: made during some build's compile, it would look "too new" to ccache, which
/// then stores nothing; it changes only with the entry's key anyway).
std::string merge_depfile(std::string_view compile_deps, std::string_view header_deps, std::string_view drop = {});

/// The outcome a compile logs, one line: "<what>\t<source>\t<detail>"; what is made (before its
/// own outcome: the compile that made it logs a second line), used,
/// not-used (gcc refused the .gch), fallback (failed with it, compiled again), skipped (a reason
/// it was not tried), busy (another compile was making it), first (fewer than kMakeAt compiles were
/// known to need it yet: a header that one or two files use costs more than it saves).
struct Summary {
  unsigned made = 0, used = 0, not_used = 0, fallback = 0, skipped = 0, busy = 0, plain = 0, first = 0;
  double make_seconds = 0;
  std::uint64_t gch_bytes = 0;
  std::vector<std::string> notes;  ///< fallbacks and refusals, one line each (source: why)
  bool any() const { return made + used + not_used + fallback + skipped + busy + first > 0; }
};
Summary summarize(std::string_view log);
/// "precompiled torch header: 1 made (35 s, 759 MiB), used by 14 of 15 C++ compiles that include it; …"
std::string summary_line(const Summary& s);

/// Where `__host-compile`'s own text goes: `out` and `err` get the compiler's output when it was
/// captured (a compile with the header, gcc's -Winvalid-pch lines taken out), `err` also opforge's
/// messages. A compile without the header writes to the process's streams itself.
struct Console {
  std::function<void(std::string_view)> out, err;
};
/// This process's stdout and stderr, each write flushed.
Console process_console();

/// `opforge __host-compile --compiler PATH --pch-dir DIR [--launcher PROGRAM] -- ARGS…`: runs one
/// host compile as above and returns its exit status (the compiler's). `-g0` comes last, as the
/// plain host wrappers add it.
int host_compile(probe::Machine m, const std::vector<std::string>& argv, const Console& console);
/// The same, its text to process_console(): `opforge __host-compile`, and `opforge __host`, which
/// runs it in its own process.
int host_compile(probe::Machine m, const std::vector<std::string>& argv);

}  // namespace opforge::compile::pch
