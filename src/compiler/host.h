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
