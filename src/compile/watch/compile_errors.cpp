/// What a failed build said, read from its log (compile/watch/compile_errors.h).
#include "compile/watch/compile_errors.h"

#include <vector>

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

/// nvcc's own driver errors ("nvcc fatal   : Unsupported gpu architecture 'compute_120'"): a
/// wrong flag or arch says why before any file is compiled.
bool nvcc_fatal(std::string_view line) { return line.starts_with("nvcc fatal"); }

}  // namespace

std::optional<std::string> failure_reason(std::string_view log, const fs::path& tree) {
  std::string ninja, first;
  for (auto raw : strings::split(log, '\n')) {
    std::string line(strings::trim(raw));
    if (line.empty()) continue;
    if (auto e = gcc_error(line, tree)) return *e;
    if (auto e = nvcc_error(line, tree)) return *e;
    if (nvcc_fatal(line)) return strings::cut(line, 400);
    if (ninja.empty() && line.starts_with("ninja: error:")) ninja = line;
    // A build stopped from outside (a signal, the out-of-memory killer) names no compiler error.
    const bool stopped =
        line.starts_with("ninja: build stopped:") && line.find("subcommand failed") == std::string::npos;
    if (first.empty() && (line.find("error:") != std::string::npos || line.starts_with("FAILED:") || stopped))
      first = line;
  }
  if (!ninja.empty()) return strings::cut(ninja, 400);
  if (!first.empty()) return strings::cut(first, 400);
  return std::nullopt;
}

std::string first_compiler_error(std::string_view log, const fs::path& tree) {
  if (auto why = failure_reason(log, tree)) return *why;
  std::string last;
  for (auto raw : strings::split(log, '\n'))
    if (auto line = strings::trim(raw); !line.empty()) last = line;
  return strings::cut(last, 400);
}

std::string log_tail(std::string_view log, std::size_t n) {
  auto lines = strings::split(log, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  auto frame_start = [](const std::string& l) { return l.starts_with("  File \""); };
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < lines.size();) {
    kept.push_back(lines[i]);
    if (lines[i] != "Traceback (most recent call last):") {
      ++i;
      continue;
    }
    ++i;
    std::size_t frames = 0, last = i;
    while (i < lines.size() && frame_start(lines[i])) {
      ++frames;
      last = i++;
      while (i < lines.size() && lines[i].starts_with("    ")) ++i;  // the frame's source and carets
    }
    if (frames > 1)
      kept.push_back("  [" + std::to_string(frames - 1) + (frames == 2 ? " frame" : " frames") + " left out]");
    kept.insert(kept.end(), lines.begin() + static_cast<std::ptrdiff_t>(last),
                lines.begin() + static_cast<std::ptrdiff_t>(i));
  }
  std::string out;
  for (std::size_t i = kept.size() > n ? kept.size() - n : 0; i < kept.size(); ++i) {
    if (!out.empty()) out += '\n';
    out += kept[i];
  }
  return out;
}

}  // namespace opforge::compile
