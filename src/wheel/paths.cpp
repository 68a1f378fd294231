// Which paths may stand inside a wheel: relative, and staying inside it once unpacked.
#include "wheel/internal.h"

namespace opforge::wheel {

std::optional<std::string> unsafe_path_reason(std::string_view path) {
  if (path.empty()) return "an empty path";
  if (path.front() == '/') return "an absolute path";
  if (path.find('\\') != std::string_view::npos) return "a backslash in the path";
  if (path.size() >= 2 && path[1] == ':') return "a drive-letter path";
  std::size_t start = 0;
  while (start <= path.size()) {
    auto slash = path.find('/', start);
    auto part = path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part == "..") return "a '..' component";
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return std::nullopt;
}

}  // namespace opforge::wheel
