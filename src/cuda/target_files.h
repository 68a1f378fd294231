#pragma once
/// A cross-build's CUDA files for the target machine: the runtime's headers and static library
/// (cudart) of the toolkit's exact release, from NVIDIA's nvidia-cuda-runtime wheel for that
/// machine, installed into the cache as provision.h installs toolkits. The toolkit's own nvcc
/// compiles the device code (it does not depend on the host CPU); nothing of the build machine's
/// toolkit is linked into the wheel.
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cuda/provision.h"
#include "cuda/toolkit.h"
#include "probe/machine.h"
#include "target/platform.h"
#include "util/error.h"

namespace opforge::cuda {

namespace fs = std::filesystem;

struct TargetFiles {
  std::string platform;     ///< "aarch64"
  std::string release;      ///< the runtime's exact release, "13.0.96"
  std::string requirement;  ///< "nvidia-cuda-runtime==13.0.96"
  /// Where the release came from: "<toolkit>/dist-info", "<toolkit>/version.json" or
  /// "the toolkit's major.minor" (the newest of that line then).
  std::string release_source;
  fs::path dir;          ///< <cache>/toolkits/aarch64-linux-13.0.96
  fs::path include_dir;  ///< dir/include: cuda_runtime.h of the target's release
  fs::path lib_dir;      ///< dir/lib: libcudart_static.a for the target machine
  bool present = false;  ///< the folder holds the files already
  bool fetched = false;  ///< this run installed them
  std::string python;    ///< whose pip installs them
  std::vector<ToolkitPackage> packages;
  std::shared_ptr<void> hold;  ///< the folder's lock, shared, while the value lives
};

/// The runtime release of `tk` (its dist-info's nvidia_cuda_runtime-X.Y.Z, version.json's
/// cuda_cudart), or "X.Y.*"; `source` says which.
std::string runtime_release(probe::Machine m, const Toolkit& tk, std::string& source);

/// What provisioning would do, reading only: the requirement, the folder, whether it is there.
Result<TargetFiles> describe_target_files(probe::Machine m, const Toolkit& tk, const target::Platform& platform,
                                          const fs::path& cache, const std::string& python);

/// Makes sure the target's files are in the cache (pip download + install --target of the wheel
/// for the target's platform tag, then checked), under the folder's lock; unsatisfied (exit 3)
/// naming the package when pip cannot fetch it. `on_line` may be null.
Result<TargetFiles> provision_target_files(probe::Machine m, const Toolkit& tk, const target::Platform& platform,
                                           const fs::path& cache, const std::string& python,
                                           const std::function<void(std::string_view)>& on_line = {});

/// As JSON for plan --json and the build record (platform, release, requirement, folder, packages).
std::string target_files_json_text(const TargetFiles& t);

/// A cross-build's torch for the target machine, for a project's own build command (a setup.py
/// torch extension): PyPI's torch wheel of the build's torch release, for the target's platform and
/// the build Python's version, installed without its dependencies into the cache. The command's
/// compilers read its headers (torch's generated config headers differ per machine: ATen/Config.h)
/// and link its libraries in place of the build Python's own torch, which setup.py imports.
struct TargetTorch {
  std::string platform;     ///< "aarch64"
  std::string version;      ///< the build torch's public release, "2.15.0" (of "2.15.0+cu132")
  std::string python_tag;   ///< "cp311"
  std::string requirement;  ///< "torch==2.15.0"
  fs::path dir;             ///< <cache>/toolkits/torch-aarch64-cp311-2.15.0
  fs::path torch_dir;       ///< dir/site/torch: include/ and lib/ for the target machine
  std::string cuda;         ///< its torch/version.py's cuda ("13.0"); empty: CPU-only, or not there yet
  bool present = false;     ///< the folder holds it already
  bool fetched = false;     ///< this run installed it
  std::string python;       ///< whose pip installs it
  std::vector<ToolkitPackage> packages;
  std::shared_ptr<void> hold;  ///< the folder's lock, shared, while the value lives
};

/// What provisioning would do, reading only. `torch_version` is the build Python's torch
/// ("2.15.0+cu132"), `python_version` its Python (3, 11).
Result<TargetTorch> describe_target_torch(probe::Machine m, const std::string& torch_version,
                                          std::pair<int, int> python_version, const target::Platform& platform,
                                          const fs::path& cache, const std::string& python);

/// Makes sure it is in the cache (pip download + install --target --no-deps), under the folder's
/// lock; unsatisfied (exit 3) naming the wheel when pip cannot fetch it.
Result<TargetTorch> provision_target_torch(probe::Machine m, const std::string& torch_version,
                                           std::pair<int, int> python_version, const target::Platform& platform,
                                           const fs::path& cache, const std::string& python,
                                           const std::function<void(std::string_view)>& on_line = {});

/// As JSON for plan --json and the build record.
std::string target_torch_json_text(const TargetTorch& t);

}  // namespace opforge::cuda
