#pragma once
/// `[build] backend = "command"`: runs a project's own build command (e.g. `python setup.py
/// bdist_wheel` of a DeepSpeed checkout) in the plan's environment, then re-packs the wheel it made
/// deterministically with wheel::normalize.
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

// plan.h uses `fs` unqualified; give it the alias it expects.
namespace opforge { namespace fs = std::filesystem; }

#include "plan/plan.h"
#include "probe/machine.h"
#include "util/error.h"

namespace opforge::build {

struct CommandOutput {
  fs::path wheel;       ///< the normalised wheel in plan.dist_dir
  fs::path raw_wheel;   ///< the wheel the command produced (left in place)
  fs::path log;         ///< plan.build_dir / "command.log": the command's full output
  std::map<std::string, std::string> env;  ///< what the command ran with (for the build record)
};

/// The command's environment: `base` (the caller's environment), then plan.exports on top, then
/// what makes the output reproducible and uses the plan's compiler:
/// CC/CXX (the chosen host compiler, or its shim), NVCC_PREPEND_FLAGS=-ccbin <shim or c++>,
/// NVCC_APPEND_FLAGS / CFLAGS / CXXFLAGS with -ffile-prefix-map=<source>=. and one fixed
/// -frandom-seed, LDFLAGS with -Wl,--build-id=none, SOURCE_DATE_EPOCH, MAX_JOBS, PYTHONHASHSEED=0.
/// Flags are appended to values already in `base`/exports, never replacing them.
/// Paths with spaces cannot be passed through NVCC_*_FLAGS (nvcc splits them on spaces).
std::map<std::string, std::string> command_environment(const std::map<std::string, std::string>& base,
                                                       const plan::Plan& plan);

/// Finds the files matching `glob` (a folder part without wildcards, then a file name pattern with
/// `*`/`?`/`[...]`, e.g. "dist/*.whl"), relative to `root`; sorted.
Result<std::vector<fs::path>> match_glob(const probe::FileSystem& fs, const fs::path& root,
                                         const std::string& glob);

/// The entries that differ between two wheels (by content, mode, or presence), sorted: what a
/// rebuild from another folder names when its bytes do not match. Empty when the entries are equal
/// (the archives may still differ in zip metadata; compare bytes for that).
Result<std::vector<std::string>> differing_entries(std::string_view wheel_a, std::string_view wheel_b);

/// Runs plan.recipe.build.command in plan.source.root with command_environment(m.env.all(), plan),
/// passing each output line to `on_line` (progress), keeps the full output in the log, and on a
/// non-zero exit fails (ErrorKind::failed) with the log's last lines. The wheel is the one file
/// matching wheel_glob that is new or changed by this run; it is normalised into plan.dist_dir with
/// plan.wheel_version (when not empty) in its file name, .dist-info and METADATA.
Result<CommandOutput> run_command_backend(probe::Machine m, const plan::Plan& plan,
                                          const std::function<void(std::string_view)>& on_line = {});

}  // namespace opforge::build
