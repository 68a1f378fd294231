#pragma once
/// The scratch tree a command build runs in: a copy of the source at a path set by its content.
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

// plan.h uses `fs` unqualified; give it the alias it expects.
namespace opforge {}

#include "probe/machine.h"
#include "util/error.h"

namespace opforge::compile {

/// A fresh copy of a source tree for one command build, at a path that depends only on the tree's
/// content: nvcc derives internal symbol names (`_INTERNAL_<hash>_`) from the source path, so the
/// same content must compile at the same path whatever folder the user's checkout is in.
struct ScratchTree {
  std::filesystem::path root;  ///< <cache_dir>/trees/<first 16 hex of content_hash>
  std::string content_hash;    ///< sha256 over relative paths, modes, contents (symlinks: targets)
  std::shared_ptr<void> lock;  ///< held while the tree is in use (concurrent builds of one tree wait)
};

/// The lock a build holds while it uses the tree `root` (<cache>/trees/<16 hex>): cache::entry_lock,
/// `.<16 hex>.lock` beside it (its size file, probe::size_file, is beside it too).
std::filesystem::path tree_lock(const std::filesystem::path& root);

/// Copies `source` (without .git, __pycache__, and the top-level build/ and dist/ — never a stale
/// build) into a fresh ScratchTree under cache_dir, waiting for another build of the same content
/// to finish (`on_wait` is told once). Only symlinks that stay inside the tree are kept as links.
Result<ScratchTree> make_scratch_tree(probe::Machine m, const std::filesystem::path& source,
                                      const std::filesystem::path& cache_dir,
                                      const std::function<void(std::string_view)>& on_wait = {});

}  // namespace opforge::compile
