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

/// What one machine adds to an op (op.toml `[machine.<platform>]`): the files only its compiler
/// builds (x86-64's AVX files, AArch64's SVE file) and their flags, which another machine's compiler
/// would reject (-mavx2 on aarch64-linux-gnu-g++).
struct MachineSources {
  std::vector<fs::path> sources;                                 ///< relative to the op's folder
  std::map<std::string, std::vector<std::string>> source_flags;  ///< file → extra flags
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
  /// DeepSpeed builders whose extension was constructed: the name torch defines as
  /// TORCH_EXTENSION_NAME and the flags its C++ files compile with besides torch's (include
  /// folders, tree-relative inside the tree, then extra_compile_args' cxx). Tells the precompiled
  /// header which ops' files compile alike before they do.
  std::string extension_name{};
  std::vector<std::string> host_args{};
  std::optional<PythonExtension> python_extension;
  /// Per machine (target::Platform::name → its sources and flags); for_platform merges one in.
  std::map<std::string, MachineSources> machines{};
};

/// `op` as a build for `platform` ("x86_64", "aarch64") compiles it: the common sources, then the
/// machine's own; each file's common flags, then the machine's. The other machines' files are left
/// out and `machines` is emptied, so the result is what every later stage (the compile graph, the
/// cpu_target check's allowance) reads, and applying it twice changes nothing. A manifest without
/// `[machine.*]` comes back as it is. Pure.
Manifest for_platform(const Manifest& op, std::string_view platform);

/// What becomes of an op: one vocabulary for plan --json's `status`, doctor, the plan's notes, the
/// build's summary and the build record's op_summary. A plan says `build`; a finished build says
/// `built` for the same op, or `failed` when its compile failed.
enum class OpStatus { build, built, skipped, failed, not_requested };

/// "build" | "built" | "skipped" | "failed" | "not requested": the one spelling of each status.
inline const char* status_name(OpStatus s) {
  switch (s) {
    case OpStatus::build: return "build";
    case OpStatus::built: return "built";
    case OpStatus::skipped: return "skipped";
    case OpStatus::failed: return "failed";
    case OpStatus::not_requested: return "not requested";
  }
  return "skipped";
}

/// status_name's inverse; nullopt for any other text.
inline std::optional<OpStatus> status_from_name(std::string_view name) {
  for (OpStatus s : {OpStatus::build, OpStatus::built, OpStatus::skipped, OpStatus::failed, OpStatus::not_requested})
    if (name == status_name(s)) return s;
  return std::nullopt;
}

struct Decision {
  Manifest manifest;
  OpStatus status = OpStatus::skipped;
  std::string requested_by;  ///< "recipe: true", "DS_BUILD_AIO=1", "DS_BUILD_OPS=1", "default"
  bool required = false;     ///< requested explicitly (true, DS_BUILD_<OP>=1): failing to build it fails the build
  /// Why, without the status word: "compatible (libaio found)", "libaio not found ...; to build
  /// it, ...", the first compile error of a failed op; empty for an op nobody asked for.
  std::string reason;

  /// Whether the wheel gets it (planned, or built).
  bool builds() const { return status == OpStatus::build || status == OpStatus::built; }
  /// false: neither the recipe nor DS_BUILD_* asks for it (never built).
  bool requested() const { return status != OpStatus::not_requested; }
  /// The status word and the reason: "skipped: libaio not found ...", "build: compatible".
  std::string said() const {
    return reason.empty() ? status_name(status) : std::string(status_name(status)) + ": " + reason;
  }
};

}  // namespace opforge::ops
