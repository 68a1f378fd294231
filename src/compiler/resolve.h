#pragma once
/// Host compilers: which are installed, which the chosen nvcc accepts, and the shim that makes an
/// accepted one visible to nvcc (docs/reference.md §1).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/host.h"
#include "cuda/toolkit.h"
#include "probe/machine.h"
#include "target/platform.h"
#include "util/error.h"

namespace opforge::compiler {

/// Limits from the text of a crt/host_config.h (`#if __GNUC__ > 15`, `__clang_major__ >= 21`);
/// a field stays 0 when the header does not say.
Limits parse_host_config(std::string_view text);

/// The toolchains/ table (docs/reference.md §1) for a CUDA version; source names the table.
Limits table_limits(const Version& cuda);

/// Whether `c` is within `limits`.
bool accepted(const Compiler& c, const Limits& limits);

/// gcc/g++, gcc-N/g++-N, clang/clang++, clang-N on PATH (deduplicated by real file, default first);
/// with `cross`, that platform's cross compilers instead (<triple>-gcc[-N] and their g++).
std::vector<Compiler> find_installed(probe::Machine m, const target::Platform* cross = nullptr);

/// Parse crt/host_config.h of the toolkit; toolchains/ table only as fallback.
Limits limits_for(probe::Machine m, const cuda::Toolkit& tk);

/// A toolkit's own host-compiler wrapper. Debian's and Ubuntu's nvidia-cuda-toolkit put `gcc` and
/// `g++` scripts beside the real nvcc (/usr/lib/nvidia-cuda-toolkit/bin), and its nvcc.profile puts
/// that folder first on nvcc's PATH: an nvcc run without -ccbin compiles host code with the first
/// installed of the versioned compilers the script lists (`if g++-13 --version ...; prog=gcc-13`).
struct ToolkitWrapper {
  fs::path path;                        ///< the script (bin/g++ preferred, else bin/gcc)
  std::vector<std::string> candidates;  ///< what it runs, in its order ("g++-13", "g++-12", ...)
  std::optional<std::string> runs;      ///< the first candidate installed here; nullopt: it fails
};

/// The candidates of such a script, in its order (`prog=g++-11` lines); empty when the text is no
/// such wrapper.
std::vector<std::string> parse_compiler_wrapper(std::string_view script);

/// The wrapper beside `tk`'s real nvcc, if it has one; `runs` is resolved on PATH.
std::optional<ToolkitWrapper> toolkit_wrapper(probe::Machine m, const cuda::Toolkit& tk);

/// One line about it for plan and doctor: "its own wrapper /usr/lib/nvidia-cuda-toolkit/bin/g++
/// runs g++-13 (the first installed of g++-13, g++-12, ...)".
std::string wrapper_text(const ToolkitWrapper& w);

/// "auto": the default compiler if accepted, else the newest installed accepted one with a shim
/// folder `shim_dir` (gcc, g++, cc, c++ symlinks); a named compiler ("g++-11", a path) is checked
/// against the limits. unsatisfied when none is accepted, naming the package to install
/// (e.g. `apt-get install g++-11`); allow_unsupported escapes. Writes nothing.
Result<HostChoice> resolve(probe::Machine m, const cuda::Toolkit& tk, const std::string& host, bool allow_unsupported,
                           const fs::path& shim_dir);

/// A cross-build's host compiler: `platform`'s cross g++ that `tk`'s nvcc accepts, by the same
/// rules as resolve() ("auto": the plain <triple>-g++ if accepted, else the newest accepted
/// <triple>-g++-N through a shim); without a toolkit, the plain one. unsatisfied (exit 3) naming
/// Debian's package when none is installed.
Result<HostChoice> resolve_cross(probe::Machine m, const cuda::Toolkit* tk, const target::Platform& platform,
                                 const std::string& host, bool allow_unsupported, const fs::path& shim_dir);

/// `name` is a compiler's file name: gcc, g++, cc, c++, clang or clang++, alone or with a version
/// suffix (gcc-12, clang++-19, gcc-12.2).
bool is_compiler_file_name(std::string_view name);

}  // namespace opforge::compiler
