#include "compile/op_steps.h"

#include <regex>

#include "util/strings.h"

namespace opforge::compile {

namespace fs = std::filesystem;

std::optional<std::vector<std::string>> build_ext_command(const std::vector<std::string>& command) {
  for (std::size_t i = 0; i < command.size(); ++i)
    if (fs::path(command[i]).filename() == "setup.py") {
      std::vector<std::string> out(command.begin(), command.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      out.emplace_back("build_ext");
      return out;
    }
  return std::nullopt;
}

namespace {

/// `path` relative to `tree` when it lies inside it.
std::string inside(std::string path, const fs::path& tree) {
  const std::string prefix = tree.string() + "/";
  if (!tree.empty() && path.starts_with(prefix)) path.erase(0, prefix.size());
  return path;
}

}  // namespace

std::string first_compiler_error(std::string_view log, const fs::path& tree) {
  // gcc/clang: "file:12:5: error: message"; nvcc (EDG front end): "file(12): error: message".
  static const std::regex gcc(R"(^(\S[^:]*):(\d+):(?:\d+:)? (?:fatal )?error: (.*)$)");
  static const std::regex nvcc(R"(^(\S.*)\((\d+)\): (?:catastrophic )?error: (.*)$)");
  std::string fallback, last;
  for (auto raw : strings::split(log, '\n')) {
    std::string line(strings::trim(raw));
    if (line.empty()) continue;
    last = line;
    std::smatch m;
    if (std::regex_match(line, m, gcc)) return inside(m[1], tree) + ":" + m[2].str() + ": error: " + m[3].str();
    if (std::regex_match(line, m, nvcc)) return inside(m[1], tree) + ":" + m[2].str() + ": error: " + m[3].str();
    // A build stopped from outside (a signal, the out-of-memory killer) names no compiler error.
    const bool stopped =
        line.starts_with("ninja: build stopped:") && line.find("subcommand failed") == std::string::npos;
    if (fallback.empty() && (line.find("error:") != std::string::npos || line.starts_with("FAILED:") || stopped))
      fallback = line;
  }
  return strings::cut(fallback.empty() ? last : fallback, 400);
}

}  // namespace opforge::compile
