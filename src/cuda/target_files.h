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

}  // namespace opforge::cuda
