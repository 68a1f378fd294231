#pragma once
/// DeepSpeed's own op catalogue: the builder classes of `op_builder/` (docs/external-projects.md).
/// The catalogue is read statically (Python's `ast`, no torch import); compatibility is DeepSpeed's
/// own `is_compatible()` verdict, asked of the project's Python with torch.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ops/manifest.h"
#include "probe/machine.h"
#include "util/error.h"

namespace opforge::ops {

/// `<root>/op_builder/builder.py` exists: the tree is a DeepSpeed-style project.
bool has_op_builder(const probe::FileSystem& fs, const fs::path& root);

/// The builders of `<root>/op_builder` as the CUDA accelerator sees them (top-level modules, then
/// the host-side optimizers of `op_builder/cpu`), one Manifest each: name (NAME), build_var
/// (BUILD_VAR), sources when sources() returns literal lists, kind (cuda when a source is .cu,
/// cpu+cuda when the builder derives from CUDAOpBuilder without .cu sources, else cpu), and
/// builder_class ("op_builder.fused_adam:FusedAdamBuilder"). Runs `python` once (no torch import).
/// bad_input when op_builder/ cannot be read or holds no builder.
Result<std::vector<Manifest>> load_deepspeed_catalogue(probe::Machine m, const fs::path& root,
                                                       const std::string& python);

/// The catalogue script's JSON output → manifests (the pure half of load_deepspeed_catalogue).
Result<std::vector<Manifest>> parse_deepspeed_catalogue(const fs::path& root, std::string_view json);

/// One builder's answer: is_compatible(), then (when compatible) the construction of its extension
/// as setup.py does it (builder()), which compiles nothing but runs the imports and flag logic.
struct Compatibility {
  bool ok = false;
  std::string reason;        ///< DeepSpeed's warning text (or the exception, with where) when not ok
  bool constructed = false;  ///< not ok because builder() raised (is_compatible() said yes)
  std::string fix{};         ///< e.g. "pip install deepspeed-kernels (it provides the module 'dskernels')"
  std::string module{};      ///< the module a ModuleNotFoundError names
  /// The sources of the extension builder() constructed (relative to the tree), when it could be:
  /// exact where the builder computes them at run time.
  std::vector<std::string> sources{};
  std::string extension{};               ///< its TORCH_EXTENSION_NAME ("cpu_adam_op")
  std::vector<std::string> host_args{};  ///< -I<folder> (tree-relative inside it), then its cxx args
};

struct CompatibilityQuery {
  fs::path root;                           ///< the DeepSpeed tree (cwd and sys.path[0] of the script)
  std::string python;                      ///< the project's Python (with torch)
  std::vector<Manifest> ops;               ///< the builders to ask (builder_class set)
  std::map<std::string, std::string> env;  ///< the build's environment (CUDA_HOME, DS_ACCELERATOR ...)
  fs::path cache_dir;                      ///< empty: no cache
  std::string torch_identity;              ///< torch's folder and version.py hash (cache key)
};

/// Each op's `is_compatible(verbose=True)` verdict and, for a compatible one, whether its extension
/// can be constructed (builder()), by op name: one Python run of the probe
/// (<data_dir>/src/python/probes/deepspeed_ops.py) for all of them,
/// cached (cache_dir/deepspeed-compat.json) by a hash of op_builder/'s files, the probe, the Python
/// (path and stamp), torch's identity (its version.py), the variables compatibility reads and the
/// op list.
/// failed when the Python cannot be run or its answer cannot be read.
Result<std::map<std::string, Compatibility>> deepspeed_compatibility(probe::Machine m, const CompatibilityQuery& q);

/// The compatibility script's JSON output (pure half of deepspeed_compatibility).
Result<std::map<std::string, Compatibility>> parse_deepspeed_compatibility(std::string_view json);

}  // namespace opforge::ops
