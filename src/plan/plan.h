#pragma once
/// The plan: pure data, everything decided before anything is compiled. `opforge plan` prints it,
/// `opforge env` prints its exports, `opforge build` executes it.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/host.h"
#include "cuda/toolkit.h"
#include "devices/arch.h"
#include "ops/manifest.h"
#include "recipe/recipe.h"

namespace opforge::plan {

struct SourceInfo {
  fs::path root;            ///< absolute source tree
  fs::path ops_dir;         ///< absolute folder of the op manifests
  std::string commit;       ///< full hex commit, empty when not a git tree
  bool dirty = false;
  std::optional<std::int64_t> commit_time;  ///< seconds since the epoch
};

struct Plan {
  recipe::Recipe recipe;
  SourceInfo source;
  cuda::Resolution cuda;                 ///< chosen may be empty when no CUDA op is built
  std::optional<compiler::HostChoice> host;
  devices::ArchDecision arch;
  std::vector<ops::Decision> ops;        ///< every op found, built or not, sorted by name
  unsigned jobs = 1;
  std::int64_t source_date_epoch = 315532800;  ///< 1980-01-01, clamped
  std::string wheel_version;             ///< "0.1.0+cu13.g8cd046f"
  fs::path build_dir;                    ///< absolute
  fs::path dist_dir;                     ///< absolute
  /// Exports for `opforge env` and for the command backend: CUDA_HOME, PATH, LD_LIBRARY_PATH,
  /// TORCH_CUDA_ARCH_LIST, DS_BUILD_*, MAX_JOBS, SOURCE_DATE_EPOCH ...
  std::map<std::string, std::string> exports;
  std::vector<std::string> notes;        ///< one line per decision worth explaining
  std::vector<std::string> warnings;
};

}  // namespace opforge::plan
