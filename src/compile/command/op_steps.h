#pragma once
/// A DeepSpeed-style command build op by op: each op compiled alone in the scratch tree
/// (`setup.py build_ext` with only its DS_BUILD_* on), so that one op's failure costs that op
/// only. The recipe's command then writes the wheel for the ops that built: setuptools skips an
/// extension whose library is newer than its sources, so nothing compiles twice.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ops/manifest.h"

namespace opforge::compile {

/// A step's outcome is ops' vocabulary: built or failed.
using ops::OpStatus;

/// One op's compile step.
struct OpStep {
  std::string op;
  OpStatus status = OpStatus::built;
  std::string first_error{};    ///< failed: "csrc/x/k.cu:234: error: ..." (or the log's last line)
  std::filesystem::path log{};  ///< the step's full output
  double seconds = 0;
  long peak_rss_kib = 0;  ///< the largest process of the step (ru_maxrss), 0 when unknown
};

/// `[python, setup.py, bdist_wheel, ...]` → `[python, setup.py, build_ext]`: the command that
/// compiles the extensions only; nullopt when the command runs no setup.py (then the ops are
/// built in one go by the command itself).
std::optional<std::vector<std::string>> build_ext_command(const std::vector<std::string>& command);

}  // namespace opforge::compile
