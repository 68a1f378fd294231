#pragma once
/// An op, defined once by the op.toml manifest in its folder (see docs/architecture.md).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace opforge::ops {

namespace fs = std::filesystem;

enum class Kind { cpu, cuda };

/// A compatibility probe: compile and link a tiny program with the chosen host compiler.
struct Probe {
  std::string name;       ///< e.g. "libaio"
  std::string header;     ///< e.g. "libaio.h"
  std::string code;       ///< body of main(), e.g. "io_submit(0, 0, 0);"
  std::vector<std::string> libraries;  ///< e.g. {"aio"}
  std::map<std::string, std::string> packages;  ///< apt/yum/pacman → package name
};

struct Manifest {
  std::string name;          ///< "overflow"
  Kind kind = Kind::cpu;
  std::string description;
  fs::path dir;              ///< absolute folder holding op.toml
  std::vector<fs::path> sources;  ///< relative to dir
  std::map<std::string, std::vector<std::string>> source_flags;  ///< file → extra flags
  std::vector<std::string> cxx_flags;
  std::vector<std::string> nvcc_flags;
  std::vector<std::string> ldflags;
  std::vector<std::string> libraries;  ///< linked with -l (e.g. "pthread", "dl")
  std::vector<fs::path> include_dirs;  ///< relative to dir
  std::string build_var;     ///< DS_BUILD_OVERFLOW by default
  std::vector<Probe> probes;
  std::string library_name;  ///< file name of the shared library, e.g. "libopforge_overflow.so"
};

struct Decision {
  Manifest manifest;
  bool build = false;
  std::string requested_by;  ///< "recipe: true", "DS_BUILD_AIO=1", "DS_BUILD_OPS=1", "default"
  std::string reason;        ///< why it is (not) built, e.g. "libaio not found: apt-get install libaio-dev"
};

}  // namespace opforge::ops
