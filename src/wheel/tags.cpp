// A wheel's tags in their two spellings: the WHEEL file's one tag a line, and the file name's
// compressed triple (PEP 425).
#include <algorithm>
#include <set>

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

namespace {

/// "311" for "pkg/_C.cpython-311-x86_64-linux-gnu.so"; empty for any other name.
std::string cpython_version(std::string_view path) {
  auto slash = path.rfind('/');
  std::string_view leaf = slash == std::string_view::npos ? path : path.substr(slash + 1);
  auto at = leaf.find(".cpython-3");
  if (at == std::string_view::npos || !leaf.ends_with(".so")) return "";
  std::string_view rest = leaf.substr(at + 9);  // "311-x86_64-linux-gnu.so"
  std::size_t n = 0;
  while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') ++n;
  return n >= 2 && n < rest.size() && rest[n] == '-' ? std::string(rest.substr(0, n)) : "";
}

bool torch_library(std::string_view lib) {
  return lib.starts_with("libtorch") || lib.starts_with("libc10") || lib.starts_with("libshm");
}

}  // namespace

AbiDecision abi_tag(const std::vector<std::string>& paths, int floor_minor) { return abi_tag(paths, floor_minor, {}); }

AbiDecision abi_tag(const std::vector<std::string>& paths, int floor_minor,
                    const std::map<std::string, ElfInfo>& elfs) {
  AbiDecision d;
  std::set<std::string> versions;
  std::vector<std::string> unnamed;  // extensions whose name does not say their Python
  for (const auto& p : paths) {
    auto elf = elfs.find(p);
    const bool exports_init = elf != elfs.end() && !elf->second.python_init.empty();
    if (elf != elfs.end() && std::any_of(elf->second.needed.begin(), elf->second.needed.end(), torch_library))
      d.torch_linked.push_back(p);
    if (p.ends_with(".abi3.so")) {
      d.abi3_files.push_back(p);
    } else if (auto v = cpython_version(p); !v.empty()) {
      d.extension_files.push_back(p);
      versions.insert(v);
    } else if (exports_init) {
      d.extension_files.push_back(p);
      unnamed.push_back(p);
    }
  }
  std::sort(d.abi3_files.begin(), d.abi3_files.end());
  std::sort(d.extension_files.begin(), d.extension_files.end());
  std::sort(d.torch_linked.begin(), d.torch_linked.end());
  const std::string torch = d.torch_linked.empty()
                                ? ""
                                : "; " + strings::join(d.torch_linked, ", ") +
                                      (d.torch_linked.size() == 1 ? " is" : " are") +
                                      " linked against torch's libraries (libtorch, libc10): it loads only with the "
                                      "torch it was built against";
  if (!d.extension_files.empty()) {
    const std::string files = strings::join(d.extension_files, ", ");
    const std::string are = d.extension_files.size() == 1 ? " is a CPython extension" : " are CPython extensions";
    if (versions.size() == 1 && unnamed.empty()) {
      const std::string v = *versions.begin();
      d.python_abi = "cp" + v + "-cp" + v;
      d.reason = files + are + " for CPython " + v.substr(0, 1) + "." + v.substr(1) +
                 " only (its file name says cpython-" + v + "; not the stable ABI)" + torch;
    } else if (versions.size() > 1) {
      d.reason = files + are + " for several CPython versions (" +
                 strings::join({versions.begin(), versions.end()}, ", ") + "): one wheel cannot be tagged for all" +
                 torch;
    } else {
      d.reason = files + are + " (exporting PyInit_*) whose file name does not say which CPython" + torch;
    }
    return d;
  }
  if (d.abi3_files.empty()) {
    d.python_abi = "py3-none";
    d.reason =
        "no file is a CPython extension (no *.abi3.so or *.cpython-3XY-*.so, none exports PyInit_*): "
        "its shared libraries are loaded with ctypes, any Python 3" +
        torch;
    return d;
  }
  const std::string files = strings::join(d.abi3_files, ", ");
  if (floor_minor <= 0) {
    d.reason = files + " built against the stable ABI (abi3), for a Python floor not known" + torch;
    return d;
  }
  const std::string floor = "3." + std::to_string(floor_minor);
  d.python_abi = "cp3" + std::to_string(floor_minor) + "-abi3";
  d.reason = files + (d.abi3_files.size() == 1 ? " is a CPython extension" : " are CPython extensions") +
             " built against the stable ABI (abi3, Py_LIMITED_API " + floor + "): CPython " + floor + " and later" +
             torch;
  return d;
}

}  // namespace opforge::wheel
