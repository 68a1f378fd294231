#pragma once
/// `[cuda] provision = "pypi"`: torch's exact CUDA toolkit, installed from NVIDIA's PyPI wheels
/// (cuda-toolkit[nvcc,cudart,cccl]) with the project's Python and pip into
/// <cache>/toolkits/<major.minor>/, laid out as a CUDA_HOME (bin/, include/, lib64/, nvvm/).
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/layout.h"
#include "cuda/toolkit.h"
#include "probe/machine.h"
#include "util/error.h"

namespace opforge::cuda {

namespace fs = std::filesystem;

/// The pip extras opforge asks for: the compiler driver (with cicc and the crt headers), the
/// runtime headers and libraries, and the C++ core libraries torch's headers include.
inline constexpr std::string_view kToolkitExtras = "nvcc,cudart,cccl";

/// One wheel a provisioned toolkit was installed from.
struct ToolkitPackage {
  std::string name;     ///< "nvidia-cuda-nvcc"
  std::string version;  ///< "13.2.86"
  std::string file;     ///< the wheel's file name
  std::string sha256;   ///< of the wheel file
};

/// A provisioned toolkit: what it is (or would be) installed from, and where.
struct Provision {
  Version cuda;                          ///< torch's major.minor
  std::string requirement;               ///< "cuda-toolkit[nvcc,cudart,cccl]==13.2.2"
  std::string requirement_source;        ///< where the pin was read ("torch-2.15.0.dist-info/METADATA")
  fs::path dir;                          ///< <cache>/toolkits/13.2
  bool present = false;                  ///< dir already holds the toolkit (nothing to fetch)
  bool fetched = false;                  ///< this run installed it
  std::string python;                    ///< whose pip installs it
  std::vector<ToolkitPackage> packages;  ///< read from the folder's manifest when present
  /// provision(): a shared lock on the folder, held as long as this value (or a copy) lives, so
  /// that `opforge cache prune` leaves a toolkit a build uses alone.
  std::shared_ptr<void> hold;
};

/// The requirement for torch's CUDA `cuda`: the exact cuda-toolkit version torch's METADATA
/// requires when it names one of that major.minor, else `==major.minor.*`. Pure.
std::string toolkit_requirement(std::string_view torch_metadata, const Version& cuda);

/// unsatisfied for a CUDA that PyPI carries no nvcc for (major <= 12: its nvcc wheels hold ptxas
/// only); ok otherwise.
Status check_provisionable(const Version& cuda);

/// The manifest file inside a provisioned toolkit's folder.
inline constexpr std::string_view kManifest = "opforge-toolkit.json";

/// What provisioning torch's CUDA would do, reading only: the requirement, the folder, whether
/// it is there already (and then its packages). unsatisfied when torch has no CUDA or PyPI none.
Result<Provision> describe_provision(probe::Machine m, const TorchInfo& torch, const fs::path& cache);

/// Makes sure the toolkit is in <cache>/toolkits/<X.Y>: reuses it (no network), else installs it
/// with `python -m pip` into a temporary folder beside it, checks nvcc, and renames. One build at
/// a time per version makes it (the lock file, exclusive; a second one waits); the result holds
/// the lock shared (Provision::hold), and its use is recorded (the cache's last-use time). unsatisfied (exit 3) when
/// pip cannot fetch the packages (the message names them); nothing half-made is left behind. `on_line` (may be null)
/// gets one line per step.
Result<Provision> provision(probe::Machine m, const TorchInfo& torch, const fs::path& cache,
                            const std::function<void(std::string_view)>& on_line = {});

/// The provision as JSON (plan --json, the build record): cuda, requirement, its source, the
/// folder, fetched/present, and each package with version and sha256.
std::string provision_json_text(const Provision& p);

/// Every provisioned toolkit under <cache>/toolkits (for doctor and the cache listing).
std::vector<Provision> list_provisioned(const probe::FileSystem& fs, const fs::path& cache);

/// `python -m pip ARGS` (30 minutes at most): how provisioning runs pip, here and in target_files.cpp.
Result<probe::ProcessResult> pip(probe::Machine m, const std::string& python, std::vector<std::string> args);

/// The last `n` lines of a process's output, for error messages.
std::string last_lines(const std::string& text, std::size_t n);

/// The lock file that guards <cache>/toolkits/<X.Y> while it is made or used.
fs::path provision_lock(const fs::path& cache, const Version& cuda);

// The toolkit cache's layout, for `opforge cache` (cache/): <cache>/toolkits/<X.Y>/ (with
// kManifest and kLastUse inside), its lock `.<X.Y>.lock` and its size file (probe::size_file)
// beside it, and `.partial-<X.Y>/` while a provisioning runs.
/// The lock of the toolkit folder `dir` (<cache>/toolkits/<X.Y>).
fs::path toolkit_lock(const fs::path& dir);
/// Written on every use: its time is the folder's last use.
inline constexpr std::string_view kLastUse = cache::kLastUse;
/// The prefix of a provisioning's temporary folder beside the toolkit it becomes.
inline constexpr std::string_view kPartialPrefix = ".partial-";

}  // namespace opforge::cuda
