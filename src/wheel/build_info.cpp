#include "wheel/wheel.h"

#include "util/strings.h"

namespace opforge::wheel {
namespace {

// A Python string literal; repr-style escaping of what may appear in versions and notes. A byte
// that is not UTF-8 (a program's output is bytes) is written \udcNN, Python's surrogateescape
// (PEP 383), so that the module stays valid UTF-8 source.
std::string py_str(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out = "'";
  for (std::size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    const std::size_t n = strings::utf8_char(s, i, cp);
    const auto c = static_cast<unsigned char>(s[i]);
    if (n == 0) {
      out += "\\udc";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    ++i;
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\'': out += "\\'"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += "\\x";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "'";
}

std::string py_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + py_str(items[i]);
  return out + "]";
}

// {'key': value, ...} in key order (std::map), each value written by `literal`.
template <class Map, class Literal>
std::string py_dict(const Map& map, Literal literal) {
  std::string out = "{";
  for (const auto& [key, value] : map) out += (out.size() > 1 ? ", " : "") + py_str(key) + ": " + literal(value);
  return out + "}";
}

}  // namespace

Result<std::string> build_info_py(const BuildInfo& info) {
  // Absolute paths of the build machine would make the bytes depend on where the build ran.
  auto check = [](std::string_view what, std::string_view value) -> Status {
    if (!value.empty() && value.front() == '/')
      return bad_input("build_info " + std::string(what) + " '" + std::string(value) + "' is an absolute path",
                       "record versions only; absolute paths belong in the build record");
    return {};
  };
  OPFORGE_CHECK(check("toolkit_version", info.toolkit_version));
  OPFORGE_CHECK(check("host_compiler", info.host_compiler));
  OPFORGE_CHECK(check("source_commit", info.source_commit));
  for (const auto& [op, notes] : info.notes)
    for (const auto& n : notes) OPFORGE_CHECK(check("note of " + op, n));

  std::string out =
      "# Written by opforge build: how this wheel was built (versions only, no paths).\n"
      "BUILD_INFO = {\n";
  out += "    'arch_list': " + py_list(info.arch_list) + ",\n";
  out += "    'build_vars': " + py_dict(info.build_vars, py_str) + ",\n";
  out += "    'host_compiler': " + py_str(info.host_compiler) + ",\n";
  out += "    'notes': " + py_dict(info.notes, py_list) + ",\n";
  out += "    'op_kinds': " + py_dict(info.op_kinds, py_str) + ",\n";
  out += "    'ops': " + py_list(info.ops) + ",\n";
  out += "    'opforge_version': " + py_str(info.opforge_version) + ",\n";
  out += "    'source_checkout': False,\n";
  out += "    'source_commit': " + py_str(info.source_commit) + ",\n";
  out += "    'toolkit_version': " + py_str(info.toolkit_version) + ",\n";
  out += "    'version': " + py_str(info.package_version) + ",\n";
  out += "}\n";
  return out;
}

}  // namespace opforge::wheel
