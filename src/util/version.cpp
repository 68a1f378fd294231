#include "util/version.h"

#include <charconv>

#include "util/numbers.h"
#include "util/strings.h"

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

bool VersionClause::accepts(const Version& x) const {
  // A one-part clause compares majors only: "<=12" takes 12.9, "!=12" refuses every 12.x.
  Version y = x;
  y.patch = 0;
  if (parts == 1) y.minor = 0;
  if (op == ">=") return y >= v;
  if (op == ">") return parts == 1 ? x.major > v.major : y > v;
  if (op == "<=") return parts == 1 ? x.major <= v.major : y <= v;
  if (op == "<") return y < v;
  if (op == "!=") return parts == 1 ? x.major != v.major : y != v;
  return parts == 1 ? x.major == v.major : y == v;
}

Result<std::vector<VersionClause>> parse_version_spec(std::string_view spec) {
  std::string_view whole = strings::trim(spec);
  if (whole == "auto" || whole == "torch") return std::vector<VersionClause>{};
  const std::string hint = "write \"auto\", \"torch\", a version such as \"12.4\", or a range such as \">=12.1,<13\"";
  std::vector<VersionClause> out;
  std::size_t pos = 0;
  auto fail_at = [&](std::size_t at, std::string what) {
    return bad_input("invalid CUDA version spec '" + strings::cut(spec) + "': " + what, hint,
                     Location{{}, 0, static_cast<int>(at) + 1, {}});
  };
  auto skip_spaces = [&] {
    while (pos < spec.size() && (spec[pos] == ' ' || spec[pos] == '\t')) ++pos;
  };
  auto number = [&](int& into) -> Status {
    std::size_t start = pos;
    while (pos < spec.size() && spec[pos] >= '0' && spec[pos] <= '9') ++pos;
    if (pos == start) return fail_at(start, "expected a number");
    auto n = numbers::parse_int<int>(spec.substr(start, pos - start));
    if (!n || *n > 999)
      return fail_at(start, "version number " + strings::cut(spec.substr(start, pos - start), 20) + " is too large");
    into = *n;
    return {};
  };
  for (;;) {
    VersionClause c;
    skip_spaces();
    for (std::string_view op : {">=", "<=", "==", "!=", ">", "<"})
      if (spec.substr(pos).starts_with(op)) {
        c.op = std::string(op);
        pos += op.size();
        break;
      }
    skip_spaces();
    OPFORGE_CHECK(number(c.v.major));
    c.parts = 1;
    if (pos < spec.size() && spec[pos] == '.') {
      ++pos;
      OPFORGE_CHECK(number(c.v.minor));
      c.parts = 2;
      if (pos < spec.size() && spec[pos] == '.') return fail_at(pos, "a CUDA version has two parts (major.minor)");
    }
    skip_spaces();
    out.push_back(c);
    if (pos == spec.size()) return out;
    if (spec[pos] != ',') return fail_at(pos, "expected ',' or the end of the spec");
    ++pos;
  }
}

}  // namespace opforge
