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

AbiDecision abi_tag(const std::vector<std::string>& paths, int floor_minor) {
  AbiDecision d;
  for (const auto& p : paths)
    if (p.ends_with(".abi3.so")) d.abi3_files.push_back(p);
  std::sort(d.abi3_files.begin(), d.abi3_files.end());
  if (d.abi3_files.empty()) {
    d.python_abi = "py3-none";
    d.reason = "no file is a CPython extension (its shared libraries are loaded with ctypes): any Python 3";
    return d;
  }
  const std::string files = strings::join(d.abi3_files, ", ");
  if (floor_minor <= 0) {
    d.reason = files + " built against the stable ABI (abi3), for a Python floor not known";
    return d;
  }
  const std::string floor = "3." + std::to_string(floor_minor);
  d.python_abi = "cp3" + std::to_string(floor_minor) + "-abi3";
  d.reason = files + (d.abi3_files.size() == 1 ? " is a CPython extension" : " are CPython extensions") +
             " built against the stable ABI (abi3, Py_LIMITED_API " + floor + "): CPython " + floor + " and later";
  return d;
}

}  // namespace opforge::wheel
