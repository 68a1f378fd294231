#pragma once
/// Host compilers, which of them a toolkit's nvcc accepts, and how a build reaches the chosen one.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "probe/machine.h"
#include "util/error.h"
#include "util/version.h"

namespace opforge::compiler {

namespace fs = std::filesystem;

enum class Family { gcc, clang };

/// "gcc" or "clang", as plans, records and reports name the family.
constexpr std::string_view family_name(Family f) { return f == Family::gcc ? "gcc" : "clang"; }

struct Compiler {
  Family family = Family::gcc;
  fs::path cc;   ///< gcc / clang (or gcc-11)
  fs::path cxx;  ///< g++ / clang++ (or g++-11)
  Version version;
  bool is_default = false;  ///< the plain `gcc`/`g++` (or `cc`/`c++`) on PATH
};

/// Highest versions a toolkit accepts, from its crt/host_config.h or the toolchains/ table.
struct Limits {
  int max_gcc = 0;
  int max_clang = 0;
  std::string source;  ///< path of the header read, or "toolchains/cuda-host-compilers.toml"
};

struct HostChoice {
  Compiler compiler;
  Limits limits;
  std::optional<fs::path> shim_dir;  ///< folder with gcc/g++/cc/c++ symlinks, when needed
  /// Non-empty: shim_dir holds wrappers that pin this CPU target (compiler/cpu_target.h).
  std::string cpu_target;
  bool allow_unsupported = false;   ///< add -allow-unsupported-compiler
  std::string reason;               ///< why this compiler
  std::vector<Compiler> installed;  ///< everything found
};

}  // namespace opforge::compiler

namespace opforge::compiler {

/// How a build reaches the chosen compiler: the one rule for native builds, command builds,
/// `opforge env` and `opforge plan`. Through the shim folder when the choice has one (gcc/g++, or
/// cc/c++ for clang; its links, or the cpu_target wrappers), else the compiler's own paths.
struct Invocation {
  fs::path cc;
  fs::path cxx;             ///< also what the native backend gives nvcc's -ccbin
  fs::path ccbin;           ///< the shim folder, or cxx: -ccbin in a command build's NVCC_PREPEND_FLAGS
  bool needs_shim = false;  ///< the shim folder must exist (ensure_shim) before a compile
};

Invocation invocation(const HostChoice& c);

/// The variables a build reaching `c` gets: CC and CXX (invocation), and with a shim, PATH with the
/// shim folder first, then `path` (a tool that runs a bare gcc or c++ finds the chosen one).
/// bad_input when the shim folder holds ':', which separates PATH's folders.
Result<std::map<std::string, std::string>> environment(const HostChoice& c, const std::string& path);

/// Makes the shim folder when `c` has one: gcc, g++, cc, c++ symlinks, or with a cpu_target the
/// wrappers (compiler/cpu_target.h); each entry replaced atomically, idempotent, nothing when there
/// is no shim. The pipeline calls it before either backend runs, and `opforge env` before printing
/// paths into it; the backends only check it (check_shim). Refuses to replace anything there that
/// is not opforge's.
Status ensure_shim(probe::FileSystem& fs, const HostChoice& c);

/// failed when `c` has a shim whose compiler is not there: a backend run without ensure_shim.
Status check_shim(const probe::FileSystem& fs, const HostChoice& c);

/// "<resolved path> <size> <mtime ns>" of a compiler (or nvcc): what ccache's default compiler
/// check sees through a wrapper script. A wrapper's folder is named by a hash over it, so a
/// compiler upgraded in place gets a new wrapper and new ccache keys. Empty when unreadable.
std::string stamp(const probe::FileSystem& fs, const fs::path& exe);

/// Writes the executable script `text` at `path` (its folder made, a symlink there replaced)
/// unless it is there already: then its mtime stays, and so do ccache's entries for it.
Status write_script(probe::FileSystem& fs, const fs::path& path, const std::string& text);

}  // namespace opforge::compiler
