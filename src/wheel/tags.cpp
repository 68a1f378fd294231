// A wheel's tags in their two spellings: the WHEEL file's one tag a line, and the file name's
// compressed triple (PEP 425).
#include <algorithm>

#include "util/strings.h"
#include "wheel/internal.h"

namespace opforge::wheel {

std::string compressed_tag(const std::vector<std::string>& tags) {
  std::vector<std::string> py, abi, plat;
  auto add = [](std::vector<std::string>& v, std::string s) {
    if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
  };
  for (const auto& t : tags) {
    auto a = t.find('-'), b = t.find('-', a == std::string::npos ? a : a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    add(py, t.substr(0, a));
    add(abi, t.substr(a + 1, b - a - 1));
    add(plat, t.substr(b + 1));
  }
  auto dot = [](const std::vector<std::string>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "." : "") + v[i];
    return s;
  };
  return dot(py) + "-" + dot(abi) + "-" + dot(plat);
}

std::vector<std::string> expand_tag(std::string_view compressed) {
  auto parts = strings::split(compressed, '-');
  std::vector<std::string> out;
  if (parts.size() != 3) return out;
  for (const auto& py : strings::split(parts[0], '.'))
    for (const auto& abi : strings::split(parts[1], '.'))
      for (const auto& plat : strings::split(parts[2], '.')) out.push_back(py + "-" + abi + "-" + plat);
  return out;
}

std::vector<std::string> python_abi_of(const std::vector<std::string>& tags) {
  std::vector<std::string> out;
  for (const auto& t : tags) {
    auto a = t.find('-'), b = a == std::string::npos ? a : t.find('-', a + 1);
    if (b == std::string::npos) continue;
    std::string pa = t.substr(0, b);
    if (std::find(out.begin(), out.end(), pa) == out.end()) out.push_back(std::move(pa));
  }
  return out;
}

}  // namespace opforge::wheel
