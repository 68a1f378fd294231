#pragma once
/// The scratch tree a command build runs in: a copy of the source at a path set by its content.
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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
  /// The tree an interrupted (killed, failed) build of the same content and resume key left was
  /// taken as it is, its build outputs included, instead of a fresh copy.
  bool resumed = false;
  int restored = 0;     ///< resumed: the source files that no longer held the source's bytes, written again
  std::string not_why;  ///< a kept tree that was not resumed: why (copied afresh); empty otherwise
};

/// The file in a scratch tree that says it was copied completely, for which content and resume key.
inline constexpr const char* kResumeStamp = ".opforge-resume";

/// What decides whether a kept tree may be resumed: `key(root)` is a digest of everything that
/// decides the build's compile commands in a tree at `root` (resume_key). An empty `key`: never
/// resumed.
struct ScratchResume {
  std::function<std::string(const std::filesystem::path& root)> key;
};

/// The lock a build holds while it uses the tree `root` (<cache>/trees/<16 hex>): cache::entry_lock,
/// `.<16 hex>.lock` beside it (its size file, probe::size_file, is beside it too).
std::filesystem::path tree_lock(const std::filesystem::path& root);

/// Copies `source` (without .git, __pycache__, and the top-level build/ and dist/ — never a stale
/// build) into a fresh ScratchTree under cache_dir, waiting for another build of the same content
/// to finish (`on_wait` is told once). Only symlinks that stay inside the tree are kept as links.
/// With `resume.key`, a tree already there whose kResumeStamp names the same content hash and key
/// (it was copied completely, for the same compile commands, by a build that never finished) is
/// resumed instead: each source file whose bytes differ from the source's, or that is missing, is
/// written again (its new mtime makes ninja recompile what depends on it), and everything else —
/// the objects, ninja's state — is kept. Any other tree there is removed and copied afresh.
Result<ScratchTree> make_scratch_tree(probe::Machine m, const std::filesystem::path& source,
                                      const std::filesystem::path& cache_dir,
                                      const std::function<void(std::string_view)>& on_wait = {},
                                      const ScratchResume& resume = {});

/// The resume key of a command build: sha256 over `command`, `versions` (torch, toolkit) and the
/// variables of `env` that decide a compile's command or its output (compilers, flags, PATH,
/// CUDA*, NVCC_*, TORCH_*, ccache's, CMake's CMAKE_*, scikit-build-core's SKBUILD_*, and every
/// name in `also`: the recipe's [build.env], [arch] env and the plan's exports). MAX_JOBS,
/// CMAKE_BUILD_PARALLEL_LEVEL and opforge's own log variables are left out: a build resumed with
/// more jobs compiles the same objects.
std::string resume_key(const std::vector<std::string>& command, const std::vector<std::string>& versions,
                       const std::map<std::string, std::string>& env, const std::vector<std::string>& also);

}  // namespace opforge::compile
