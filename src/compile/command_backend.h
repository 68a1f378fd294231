#pragma once
/// `[build] backend = "command"`: runs a project's own build command (e.g. `python setup.py
/// bdist_wheel` of a DeepSpeed checkout) in the plan's environment, then re-packs the wheel it made
/// deterministically with wheel::normalize.
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// plan.h uses `fs` unqualified; give it the alias it expects.
namespace opforge {
namespace fs = std::filesystem;
}

#include "plan/plan.h"
#include "probe/machine.h"
#include "util/error.h"

namespace opforge::compile {

struct CommandOutput {
  fs::path wheel;         ///< the normalised wheel in plan.dist_dir
  fs::path raw_wheel;     ///< the wheel the command produced (removed with the scratch tree)
  fs::path tree;          ///< the scratch tree the command ran in
  std::string tree_hash;  ///< its content hash
  /// DeepSpeed trees: the ops its git_version_info_installed.py lists as installed.
  std::vector<std::string> installed_ops;
  fs::path log;                            ///< plan.build_dir / "command.log": the command's full output
  std::map<std::string, std::string> env;  ///< what the command ran with (for the build record)
};

struct HostWrappers;

/// The command's environment: `base` (the caller's environment), then plan.exports on top, then
/// what makes the output reproducible and uses the plan's compiler (compiler::invocation):
/// CC/CXX (the chosen host compiler, or its shim), NVCC_PREPEND_FLAGS=-ccbin <shim or c++>,
/// NVCC_APPEND_FLAGS / CFLAGS / CXXFLAGS with -ffile-prefix-map=<tree>=. and one fixed
/// -frandom-seed, LDFLAGS with -Wl,--build-id=none, SOURCE_DATE_EPOCH, MAX_JOBS, PYTHONHASHSEED=0,
/// and the compiler cache (recipe [build] cache: CCACHE_* for torch's own ccache wrapping; none:
/// TORCH_NO_COMPILER_WRAPPER=1). setuptools takes CFLAGS/CXXFLAGS from the environment instead of
/// Python's own (sysconfig CFLAGS: -DNDEBUG -fwrapv -O2 ...), so those come first, then the
/// caller's, then opforge's. `tree` is where the command runs (default: plan.source.root).
/// Paths with spaces cannot be passed through NVCC_*_FLAGS (nvcc splits them on spaces).
/// With a toolkit chosen and `nvcc_wrapper` given (nvcc_wrapper_path), PYTORCH_NVCC names it
/// (behind `ccache` with [build] cache = "ccache": torch wraps only its own nvcc).
/// With `host` given (host_wrappers), CC, CXX and -ccbin name its scripts and its folder goes
/// first on PATH.
std::map<std::string, std::string> command_environment(const std::map<std::string, std::string>& base,
                                                       const plan::Plan& plan, const fs::path& tree = {},
                                                       const fs::path& nvcc_wrapper = {},
                                                       const HostWrappers* host = nullptr);

/// The variables command_environment sets or changes relative to `base`, and every plan export
/// (even where `base` agrees): what `opforge env` and `opforge plan` print.
std::map<std::string, std::string> command_exports(const std::map<std::string, std::string>& base,
                                                   const plan::Plan& plan, const fs::path& tree = {},
                                                   const fs::path& nvcc_wrapper = {},
                                                   const HostWrappers* host = nullptr);

/// The nvcc a command build's torch extensions compile with (torch's ninja builds run
/// $PYTORCH_NVCC): a script that runs the toolkit's `nvcc` without `-lineinfo` /
/// `--generate-line-info`. The line table those add records each source and header file's
/// modification time (DWARF file entries), and the scratch tree's files and a pip-installed torch's
/// headers get theirs when they are written: DeepSpeed's fused_adam (built with -lineinfo) would
/// otherwise differ from one build to the next in a few bytes of its .nv_fatbin.
struct NvccWrapper {
  fs::path path;     ///< <cache_dir>/nvcc/<16 hex of the text's sha256>/nvcc (named nvcc for ccache)
  std::string text;  ///< the script
};
/// `stamp` (compiler::stamp of the real nvcc) goes into the folder's name with the text: a toolkit
/// upgraded in place gets a new wrapper, and ccache a new key.
NvccWrapper nvcc_wrapper(const fs::path& cache_dir, const fs::path& nvcc, const std::string& stamp = {});

/// Writes the wrapper unless the same text is there already (its mtime stays: ccache checks the
/// compiler's mtime).
Status write_nvcc_wrapper(probe::FileSystem& fs, const NvccWrapper& w);

/// The wrapper a command build of `plan` uses (in ops::default_cache_dir), or nothing when the plan
/// chose no toolkit: what `opforge plan` and `opforge env` name.
std::optional<NvccWrapper> default_nvcc_wrapper(probe::Machine m, const plan::Plan& plan);

/// The host wrappers a command build of `plan` uses (in ops::default_cache_dir), or nothing.
std::optional<HostWrappers> default_host_wrappers(probe::Machine m, const plan::Plan& plan);

/// The host compilers a command build runs (CC, CXX, nvcc's -ccbin, first on PATH): scripts that
/// run the plan's compilers (compiler::invocation: the shim, the cpu_target wrappers or the
/// compiler itself) with `-g0` after every argument of a compile (`-c`). opforge strips every library
/// of the wheel it re-packs (wheel::normalize), so the debug information that Python's CFLAGS and
/// projects ask for (`-g`; DeepSpeed's builders add their own) is thrown away: it costs about a
/// third of each torch extension's compile time, and GCC and clang never let -g change the code
/// they generate, so the stripped libraries are the same bytes with or without it.
struct HostWrappers {
  /// <cache_dir>/host/<16 hex of a sha256 over the scripts and the real compilers' size and mtime>:
  /// a compiler upgraded in place gets new wrappers, and ccache (which checks the compiler's mtime)
  /// a new key.
  fs::path dir;
  fs::path cc, cxx;  ///< what CC and CXX name: dir/gcc and dir/g++ (dir/cc and dir/c++ for clang)
  std::vector<std::pair<std::string, std::string>> files;  ///< file name in dir → script
};
/// Nothing without a host compiler in the plan, or when its paths are not absolute.
std::optional<HostWrappers> host_wrappers(const probe::FileSystem& fs, const fs::path& cache_dir,
                                          const plan::Plan& plan);

/// Writes each script unless the same text is there already (its mtime stays, as for the nvcc wrapper).
Status write_host_wrappers(probe::FileSystem& fs, const HostWrappers& w);

/// command_exports with the wrappers a build of `plan` uses (default_nvcc_wrapper,
/// default_host_wrappers): what `opforge plan` and `opforge env` print. Writes nothing.
std::map<std::string, std::string> planned_exports(probe::Machine m, const plan::Plan& plan, const fs::path& tree = {});

/// Writes those wrappers, for `opforge env`, whose exports name them.
Status write_planned_wrappers(probe::Machine m, const plan::Plan& plan);

/// A fresh copy of a source tree for one command build, at a path that depends only on the tree's
/// content: nvcc derives internal symbol names (`_INTERNAL_<hash>_`) from the source path, so the
/// same content must compile at the same path whatever folder the user's checkout is in.
struct ScratchTree {
  fs::path root;               ///< <cache_dir>/trees/<first 16 hex of content_hash>
  std::string content_hash;    ///< sha256 over relative paths, modes, contents (symlinks: targets)
  std::shared_ptr<void> lock;  ///< held while the tree is in use (concurrent builds of one tree wait)
};

/// Copies `source` (without .git, __pycache__, and the top-level build/ and dist/ — never a stale
/// build) into a fresh ScratchTree under cache_dir, waiting for another build of the same content
/// to finish (`on_wait` is told once). Only symlinks that stay inside the tree are kept as links.
Result<ScratchTree> make_scratch_tree(probe::Machine m, const fs::path& source, const fs::path& cache_dir,
                                      const std::function<void(std::string_view)>& on_wait = {});

/// Finds the files matching `glob` (a folder part without wildcards, then a file name pattern with
/// `*`/`?`/`[...]`, e.g. "dist/*.whl"), relative to `root`; sorted.
Result<std::vector<fs::path>> match_glob(const probe::FileSystem& fs, const fs::path& root, const std::string& glob);

/// The entries that differ between two wheels (by content, mode, or presence), sorted: what a
/// rebuild from another folder names when its bytes do not match. Empty when the entries are equal
/// (the archives may still differ in zip metadata; compare bytes for that).
Result<std::vector<std::string>> differing_entries(std::string_view wheel_a, std::string_view wheel_b);

/// Copies plan.source.root into a scratch tree (make_scratch_tree under `cache_dir`, default
/// ops::default_cache_dir), checks the compiler shim the plan uses is there (compiler::check_shim:
/// the pipeline makes it), and runs
/// plan.recipe.build.command there with command_environment(m.env.all(), plan, tree),
/// passing each output line to `on_line` (progress), keeps the full output in the log, and on a
/// non-zero exit fails (ErrorKind::failed) with the log's last lines. The wheel is the one file
/// matching wheel_glob that is new or changed by this run; it is normalised into plan.dist_dir with
/// plan.wheel_version (when not empty) in its file name, .dist-info and METADATA.
/// DeepSpeed trees: the wheel's deepspeed/git_version_info_installed.py gets version='<wheel
/// version>'; with a torch version known, METADATA requires torch==X.Y.* (compiled extensions load
/// only with the torch they were built against). The scratch tree is removed afterwards.
Result<CommandOutput> run_command_backend(probe::Machine m, const plan::Plan& plan,
                                          const std::function<void(std::string_view)>& on_line = {},
                                          const fs::path& cache_dir = {});

/// "2.15.0+cu132" → "torch==2.15.*"; empty when the version has no major.minor.
std::string torch_requirement(const std::string& torch_version);

}  // namespace opforge::compile
