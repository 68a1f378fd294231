#include "util/pep440.h"

#include "util/scan.h"
#include "util/strings.h"

namespace opforge::pep440 {

std::optional<std::string> public_version_error(std::string_view v) {
  if (v.empty()) return "the public part (before '+') is empty";
  scan::Cursor c{v};
  if (c.digits().empty()) return "it must start with a number";
  while (c.rest.size() > 1 && c.rest[0] == '.' && scan::is_digit(c.rest[1])) {
    c.literal(".");
    c.digits();
  }
  if ((c.literal("a") || c.literal("b") || c.literal("rc")) && c.digits().empty())
    return "a pre-release marker needs a number (a1, b2, rc1)";
  if (c.literal(".post") && c.digits().empty()) return "'.post' needs a number";
  if (c.literal(".dev") && c.digits().empty()) return "'.dev' needs a number";
  if (!c.done()) return "unexpected '" + std::string(c.rest) + "'";
  return std::nullopt;
}

std::optional<std::string> local_label_error(std::string_view label) {
  if (label.empty()) return "is empty";
  for (const auto& seg : strings::split(label, '.')) {
    if (seg.empty()) return "has an empty segment";
    for (char c : seg) {
      if (!scan::is_lower(c) && !scan::is_digit(c))
        return "may only hold a-z, 0-9 and '.', not '" + std::string(1, c) + "'";
    }
  }
  return std::nullopt;
}

}  // namespace opforge::pep440
