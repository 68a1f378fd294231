#pragma once
/// Host compilers and which of them a toolkit's nvcc accepts.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "util/version.h"

namespace opforge::compiler {

namespace fs = std::filesystem;

enum class Family { gcc, clang };

struct Compiler {
  Family family = Family::gcc;
  fs::path cc;    ///< gcc / clang (or gcc-11)
  fs::path cxx;   ///< g++ / clang++ (or g++-11)
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
  bool allow_unsupported = false;    ///< add -allow-unsupported-compiler
  std::string reason;                ///< why this compiler
  std::vector<Compiler> installed;   ///< everything found
};

}  // namespace opforge::compiler

namespace opforge::compiler {

/// How a build reaches the chosen compiler. One rule for native builds, command builds and
/// `opforge env`: through the shim folder when there is one (gcc/g++, or cc/c++ for clang), else
/// the compiler's own paths; nvcc gets `-ccbin <ccbin>`.
struct Invocation {
  fs::path cc;
  fs::path cxx;
  fs::path ccbin;  ///< the shim folder, or cxx
  bool needs_shim = false;  ///< the shim folder must exist (compiler::create_shim) before use
};

inline Invocation invocation(const HostChoice& c) {
  Invocation out;
  if (c.shim_dir) {
    const bool clang = c.compiler.family == Family::clang;
    out.cc = *c.shim_dir / (clang ? "cc" : "gcc");
    out.cxx = *c.shim_dir / (clang ? "c++" : "g++");
    out.ccbin = *c.shim_dir;
    out.needs_shim = true;
  } else {
    out.cc = c.compiler.cc;
    out.cxx = c.compiler.cxx;
    out.ccbin = c.compiler.cxx;
  }
  return out;
}

}  // namespace opforge::compiler
