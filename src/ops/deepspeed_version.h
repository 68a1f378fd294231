#pragma once
/// deepspeed/git_version_info_installed.py, the Python file DeepSpeed's setup.py writes into its
/// wheel: version='0.19.8+...' and installed_ops={'cpu_adam': 1, 'utils': False, ...}.
#include <string>
#include <vector>

namespace opforge::ops {

/// Its path inside a DeepSpeed wheel.
inline constexpr const char* kDeepSpeedVersionFile = "deepspeed/git_version_info_installed.py";

/// `text` with its `version=` line set to `version`; every other byte as it was.
std::string set_deepspeed_version(const std::string& text, const std::string& version);

/// The ops `installed_ops=` marks installed (True or 1), sorted.
std::vector<std::string> deepspeed_installed_ops(const std::string& text);

}  // namespace opforge::ops
