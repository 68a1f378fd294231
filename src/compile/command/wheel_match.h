#pragma once
/// Which wheel a command build made: the files matching [build] wheel_glob.
#include <filesystem>
#include <string>
#include <vector>

// plan.h uses `fs` unqualified; give it the alias it expects.
namespace opforge {}

#include "probe/machine.h"
#include "util/error.h"

namespace opforge::compile {

/// Finds the files matching `glob` (a folder part without wildcards, then a file name pattern with
/// `*`/`?`/`[...]`, e.g. "dist/*.whl"), relative to `root`; sorted.
Result<std::vector<std::filesystem::path>> match_glob(const probe::FileSystem& fs, const std::filesystem::path& root,
                                                      const std::string& glob);

/// The one file matching `glob` in `tree` after the command ran: failed when there is none (the
/// hint names `log`) or several.
Result<std::filesystem::path> made_wheel(const probe::FileSystem& fs, const std::filesystem::path& tree,
                                         const std::string& glob, const std::filesystem::path& log);

}  // namespace opforge::compile
