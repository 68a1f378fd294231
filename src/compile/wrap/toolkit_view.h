#pragma once
/// The toolkit as a command build's project sees it: a folder of links to the chosen toolkit's
/// folders whose `bin/nvcc` is opforge's nvcc wrapper. CUDA_HOME names it, so every way a project
/// finds nvcc through CUDA_HOME or PATH — torch's setuptools path (`use_ninja=False`), which starts
/// `$CUDA_HOME/bin/nvcc` itself and never reads PYTORCH_NVCC, a setup.py that joins CUDA_HOME and
/// "bin/nvcc", a bare `nvcc` on PATH — runs the wrapper. An nvcc started by the toolkit's own
/// absolute path still escapes; the step watcher says so (compile/watch/step_watch.h).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "probe/machine.h"
#include "util/error.h"

namespace opforge::compile {

struct ToolkitView {
  std::filesystem::path root;  ///< <cache_dir>/toolkit-view/<16 hex>
  std::filesystem::path real;  ///< the toolkit's own root
  std::filesystem::path nvcc;  ///< what root/bin/nvcc links to: the nvcc wrapper
  /// Each link below root: its path relative to root → its target (absolute), sorted.
  std::vector<std::pair<std::string, std::filesystem::path>> links;
};

/// The view of the toolkit at `real` (NVIDIA's layout: `real`/bin/nvcc is the toolkit's nvcc)
/// whose nvcc is `wrapper`: one link per entry of `real` but bin/, and in bin/ one per entry but
/// nvcc (and bin/rule.json, the rule the wrapper script reads beside its own path). Its folder's name is a hash of the
/// three, so a toolkit that gains or loses an entry gets a new view. nullopt when `real` has no bin/nvcc (the
/// distributions' split layouts: their nvcc is named by PYTORCH_NVCC and CUDACXX, as before).
std::optional<ToolkitView> toolkit_view(const probe::FileSystem& fs, const std::filesystem::path& cache_dir,
                                        const std::filesystem::path& real, const std::filesystem::path& wrapper);

/// Makes the view (in a temporary folder renamed into place); one already there is kept as it is.
Status write_toolkit_view(probe::FileSystem& fs, const ToolkitView& view);

}  // namespace opforge::compile
