#include "util/version.h"

#include <charconv>

namespace opforge {

std::string Version::str(int parts) const {
  std::string s = std::to_string(major);
  if (parts >= 2) s += "." + std::to_string(minor);
  if (parts >= 3) s += "." + std::to_string(patch);
  return s;
}

std::optional<Version> parse_version(std::string_view text) {
  Version v;
  int* fields[3] = {&v.major, &v.minor, &v.patch};
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    const char* begin = text.data() + pos;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(begin, end, *fields[i]);
    if (ec != std::errc() || ptr == begin) {
      if (i == 0) return std::nullopt;
      return std::nullopt;
    }
    pos = static_cast<size_t>(ptr - text.data());
    if (pos >= text.size() || text[pos] != '.') {
      return pos == text.size() ? std::optional<Version>(v) : std::nullopt;
    }
    ++pos;
    if (i == 2) return v;  // "12.6.20241114.1": keep three parts
  }
  return v;
}

}  // namespace opforge
