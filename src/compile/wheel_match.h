#pragma once
/// Which wheel a command build made: the files matching [build] wheel_glob.
#include <filesystem>
#include <string>
#include <vector>

// plan.h uses `fs` unqualified; give it the alias it expects.
namespace opforge {
namespace fs = std::filesystem;
}

#include "probe/machine.h"
#include "util/error.h"

namespace opforge::compile {

/// Finds the files matching `glob` (a folder part without wildcards, then a file name pattern with
/// `*`/`?`/`[...]`, e.g. "dist/*.whl"), relative to `root`; sorted.
Result<std::vector<fs::path>> match_glob(const probe::FileSystem& fs, const fs::path& root, const std::string& glob);

/// The one file matching `glob` in `tree` after the command ran: failed when there is none (the
/// hint names `log`) or several.
Result<fs::path> made_wheel(const probe::FileSystem& fs, const fs::path& tree, const std::string& glob,
                            const fs::path& log);

}  // namespace opforge::compile
