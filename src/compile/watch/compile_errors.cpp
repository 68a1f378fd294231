/// The first compiler error of a build's log (compile/watch/compile_errors.h).
#include "compile/watch/compile_errors.h"

#include "util/scan.h"
#include "util/strings.h"

namespace opforge::compile {

namespace fs = std::filesystem;

namespace {

/// `path` relative to `tree` when it lies inside it.
std::string inside(std::string path, const fs::path& tree) {
  const std::string prefix = tree.string() + "/";
  if (!tree.empty() && path.starts_with(prefix)) path.erase(0, prefix.size());
  return path;
}

/// gcc/clang: "file:12:5: error: message" (the column optional, "fatal error" too).
std::optional<std::string> gcc_error(std::string_view line, const fs::path& tree) {
  const auto colon = line.find(':');
  if (colon == 0 || colon == std::string_view::npos || scan::is_space(line.front())) return std::nullopt;
  scan::Cursor c{line.substr(colon + 1)};
  const auto number = c.digits();
  if (number.empty() || !c.literal(":")) return std::nullopt;
  if (scan::Cursor column = c; !column.digits().empty() && column.literal(":")) c = column;
  if (!c.literal(" ")) return std::nullopt;
  c.literal("fatal ");
  if (!c.literal("error: ")) return std::nullopt;
  return inside(std::string(line.substr(0, colon)), tree) + ":" + std::string(number) +
         ": error: " + std::string(c.rest);
}

/// nvcc (the EDG front end): "file(12): error: message" ("catastrophic error" too); the file
/// name may hold parentheses, so the last "(N): error: " decides, as a greedy match would.
std::optional<std::string> nvcc_error(std::string_view line, const fs::path& tree) {
  if (line.empty() || scan::is_space(line.front())) return std::nullopt;
  std::optional<std::string> found;
  for (auto open = line.find('(', 1); open != std::string_view::npos; open = line.find('(', open + 1)) {
    scan::Cursor c{line.substr(open + 1)};
    const auto number = c.digits();
    if (number.empty() || !c.literal("): ")) continue;
    c.literal("catastrophic ");
    if (!c.literal("error: ")) continue;
    found =
        inside(std::string(line.substr(0, open)), tree) + ":" + std::string(number) + ": error: " + std::string(c.rest);
  }
  return found;
}

}  // namespace

std::string first_compiler_error(std::string_view log, const fs::path& tree) {
  std::string fallback, last;
  for (auto raw : strings::split(log, '\n')) {
    std::string line(strings::trim(raw));
    if (line.empty()) continue;
    last = line;
    if (auto e = gcc_error(line, tree)) return *e;
    if (auto e = nvcc_error(line, tree)) return *e;
    // A build stopped from outside (a signal, the out-of-memory killer) names no compiler error.
    const bool stopped =
        line.starts_with("ninja: build stopped:") && line.find("subcommand failed") == std::string::npos;
    if (fallback.empty() && (line.find("error:") != std::string::npos || line.starts_with("FAILED:") || stopped))
      fallback = line;
  }
  return strings::cut(fallback.empty() ? last : fallback, 400);
}

}  // namespace opforge::compile
