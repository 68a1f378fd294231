#pragma once
/// An op, defined once by the op.toml manifest in its folder (see docs/architecture.md).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opforge::ops {

namespace fs = std::filesystem;

/// cpu_cuda: a CPU op that still compiles against the CUDA toolkit (DeepSpeed's builders that
/// derive from CUDAOpBuilder without .cu sources, e.g. async_io: CUDA headers, -lcudart).
enum class Kind { cpu, cuda, cpu_cuda };

/// "cpu" | "cuda" | "cpu+cuda": the one spelling of each kind, in plans, build records, build_info
/// and the DeepSpeed probe's catalogue.
inline const char* kind_name(Kind k) { return k == Kind::cuda ? "cuda" : k == Kind::cpu_cuda ? "cpu+cuda" : "cpu"; }

/// kind_name's inverse; nullopt for any other text.
inline std::optional<Kind> kind_from_name(std::string_view name) {
  for (Kind k : {Kind::cpu, Kind::cuda, Kind::cpu_cuda})
    if (name == kind_name(k)) return k;
  return std::nullopt;
}

/// Whether building the op needs a CUDA toolkit.
inline bool needs_toolkit(Kind k) { return k != Kind::cpu; }

/// A compatibility probe: compile and link a tiny program with the chosen host compiler.
struct Probe {
  std::string name;                             ///< e.g. "libaio"
  std::string header;                           ///< e.g. "libaio.h"
  std::string code;                             ///< body of main(), e.g. "io_submit(0, 0, 0);"
  std::vector<std::string> libraries;           ///< e.g. {"aio"}
  std::map<std::string, std::string> packages;  ///< apt/yum/pacman → package name
};

/// A CPython extension module built with the op ([python_extension] in op.toml): compiled against
/// Python's stable ABI (Py_LIMITED_API = the floor), so one file serves every CPython 3 from the
/// floor on; it goes into the wheel as opforge_ops/_lib/<name>.abi3.so.
struct PythonExtension {
  std::string name;               ///< the module name, "_overflow_hooks"
  std::vector<fs::path> sources;  ///< .c/.cpp, relative to the op's folder
  int floor_minor = 8;            ///< the oldest Python 3 it serves: limited_api = "3.<floor_minor>"
  std::string file_name() const { return name + ".abi3.so"; }
  /// The Py_LIMITED_API value, "0x03080000".
  std::string limited_api_macro() const;
};

struct Manifest {
  std::string name;  ///< "overflow"
  Kind kind = Kind::cpu;
  std::string description;
  fs::path dir;                                                  ///< absolute folder holding op.toml
  std::vector<fs::path> sources;                                 ///< relative to dir
  std::map<std::string, std::vector<std::string>> source_flags;  ///< file → extra flags
  std::vector<std::string> cxx_flags;
  std::vector<std::string> nvcc_flags;
  std::vector<std::string> ldflags;
  std::vector<std::string> libraries;  ///< linked with -l (e.g. "pthread", "dl")
  std::vector<fs::path> include_dirs;  ///< relative to dir
  std::string build_var;               ///< DS_BUILD_OVERFLOW by default
  std::vector<Probe> probes;
  std::string library_name;  ///< file name of the shared library, e.g. "libopforge_overflow.so"
  /// DeepSpeed builders: "op_builder.fused_adam:FusedAdamBuilder" (module:class); empty for op.toml.
  std::string builder_class;
  std::optional<PythonExtension> python_extension;
};

struct Decision {
  Manifest manifest;
  bool build = false;
  bool requested = true;     ///< false: neither the recipe nor DS_BUILD_* asks for it (never built)
  bool failed = false;       ///< it was built and its compile failed (an "auto" op, dropped from the wheel)
  std::string requested_by;  ///< "recipe: true", "DS_BUILD_AIO=1", "DS_BUILD_OPS=1", "default"
  bool required = false;     ///< requested explicitly (true, DS_BUILD_<OP>=1): failing to build it fails the build
  std::string reason;        ///< why it is (not) built, e.g. "libaio not found: apt-get install libaio-dev"
  /// For a skipped or failed op, the reason without its leading status word ("skipped: ",
  /// "failed: "): what the build's summary prints after the op's status.
  std::string detail;
};

}  // namespace opforge::ops
