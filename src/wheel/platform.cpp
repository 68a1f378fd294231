// manylinux policy data: the libraries every manylinux platform provides, and for each glibc
// baseline the newest libstdc++ / libgcc symbol versions its reference distribution ships
// (the public PEP 600 policy as auditwheel publishes it, x86_64 rows).
#include <algorithm>
#include <array>
#include <set>

#include "util/strings.h"
#include "wheel/wheel.h"

namespace opforge::wheel {
namespace {

const std::set<std::string>& policy_libraries() {
  static const std::set<std::string> libs = {
      "libc.so.6",     "libm.so.6",      "libdl.so.2",           "librt.so.1",          "libpthread.so.0",
      "libgcc_s.so.1", "libstdc++.so.6", "ld-linux-x86-64.so.2", "libresolv.so.2",      "libutil.so.1",
      "libnsl.so.1",   "libanl.so.1",    "libmvec.so.1",         "libatomic.so.1",      "libz.so.1",
      "libexpat.so.1", "libX11.so.6",    "libXext.so.6",         "libXrender.so.1",     "libICE.so.6",
      "libSM.so.6",    "libGL.so.1",     "libgobject-2.0.so.0",  "libgthread-2.0.so.0", "libglib-2.0.so.0",
  };
  return libs;
}

struct PolicyRow {
  int glibc_minor;
  const char* glibcxx;  // newest GLIBCXX_ allowed
  const char* cxxabi;   // newest CXXABI_
  const char* gcc;      // newest GCC_
};

constexpr std::array<PolicyRow, 16> kPolicy{{
    {5, "3.4.8", "1.3.1", "4.2.0"},
    {12, "3.4.13", "1.3.3", "4.3.0"},
    {17, "3.4.19", "1.3.7", "4.8.0"},
    {24, "3.4.22", "1.3.10", "4.8.0"},
    {26, "3.4.22", "1.3.10", "4.8.0"},
    {27, "3.4.24", "1.3.11", "7.0.0"},
    {28, "3.4.24", "1.3.11", "7.0.0"},
    {31, "3.4.28", "1.3.12", "7.0.0"},
    {34, "3.4.29", "1.3.13", "7.0.0"},
    {35, "3.4.30", "1.3.13", "12.0.0"},
    {36, "3.4.30", "1.3.13", "12.0.0"},
    {37, "3.4.30", "1.3.13", "12.0.0"},
    {38, "3.4.30", "1.3.13", "12.0.0"},
    {39, "3.4.33", "1.3.15", "14.0.0"},
    {40, "3.4.33", "1.3.15", "14.0.0"},
    {41, "3.4.33", "1.3.15", "14.0.0"},
}};

std::vector<int> numbers(std::string_view dotted) {
  std::vector<int> out;
  for (const auto& part : strings::split(dotted, '.')) {
    int v = 0;
    for (char c : part) {
      if (c < '0' || c > '9') break;
      v = v * 10 + (c - '0');
    }
    out.push_back(v);
  }
  return out;
}

bool version_le(std::string_view a, std::string_view b) {
  auto x = numbers(a), y = numbers(b);
  std::size_t n = std::max(x.size(), y.size());
  x.resize(n), y.resize(n);
  return x <= y;
}

// Splits "GLIBCXX_3.4.29" into {"GLIBCXX", "3.4.29"}.
std::pair<std::string, std::string> split_version(const std::string& v) {
  auto us = v.rfind('_');
  if (us == std::string::npos) return {v, ""};
  return {v.substr(0, us), v.substr(us + 1)};
}

/// What the files need of the system: the newest GLIBC_2.X, and the newest GLIBCXX_ / CXXABI_ /
/// GCC_ versions with the file that needs each.
struct Needs {
  int glibc = 0;
  std::map<std::string, std::pair<std::string, std::string>> newest;  // family → {version, file}
};

/// Libraries outside every manylinux policy, one reason each.
std::vector<std::string> foreign_libraries(const std::map<std::string, ElfInfo>& elfs) {
  std::vector<std::string> reasons;
  for (const auto& [path, info] : elfs)
    for (const auto& lib : info.needed) {
      if (lib.starts_with("libcuda.so"))
        reasons.push_back(path + " links " + lib +
                          ", which must be opened with dlopen (the driver is not on any "
                          "manylinux policy)");
      else if (!policy_libraries().contains(lib))
        reasons.push_back(path + " needs " + lib + ", which is not on any manylinux policy");
    }
  return reasons;
}

Needs symbol_needs(const std::map<std::string, ElfInfo>& elfs) {
  Needs needs;
  for (const auto& [path, info] : elfs)
    for (const auto& [lib, versions] : info.version_needs)
      for (const auto& v : versions) {
        auto [family, number] = split_version(v);
        if (family == "GLIBC") {
          auto n = numbers(number);
          if (n.size() >= 2 && n[0] == 2) needs.glibc = std::max(needs.glibc, n[1]);
        }
        if (family == "GLIBCXX" || family == "CXXABI" || family == "GCC") {
          auto& slot = needs.newest[family];
          if (slot.first.empty() || !version_le(number, slot.first)) slot = {number, path};
        }
      }
  return needs;
}

bool fits_symbols(const Needs& needs, const PolicyRow& row) {
  auto ok = [&](const char* family, const char* limit) {
    auto it = needs.newest.find(family);
    return it == needs.newest.end() || version_le(it->second.first, limit);
  };
  return ok("GLIBCXX", row.glibcxx) && ok("CXXABI", row.cxxabi) && ok("GCC", row.gcc);
}

/// The oldest policy whose glibc baseline covers what the files need and whose libstdc++/libgcc
/// allow it. Tags name only the policies the ecosystem defines (auditwheel's list), so that
/// `auditwheel show` agrees; past the table, the glibc minor itself. nullopt: none fits.
std::optional<int> manylinux_glibc(const Needs& needs) {
  for (const auto& row : kPolicy)
    if (row.glibc_minor >= needs.glibc && fits_symbols(needs, row)) return row.glibc_minor;
  if (needs.glibc > kPolicy.back().glibc_minor && fits_symbols(needs, kPolicy.back())) return needs.glibc;
  return std::nullopt;
}

}  // namespace

PlatformDecision platform_tag(const std::map<std::string, ElfInfo>& elfs) {
  PlatformDecision d;
  if (elfs.empty()) {
    d.platform = "any";
    d.reasons.push_back("the wheel holds no ELF file");
    return d;
  }
  d.platform = "linux_x86_64";
  const Needs needs = symbol_needs(elfs);
  d.glibc_minor = needs.glibc;
  d.reasons = foreign_libraries(elfs);
  if (!d.reasons.empty()) return d;
  if (auto minor = manylinux_glibc(needs)) {
    d.platform = "manylinux_2_" + std::to_string(*minor) + "_x86_64";
    return d;
  }
  for (const auto& [family, slot] : needs.newest)
    d.reasons.push_back(slot.second + " needs " + family + "_" + slot.first +
                        ", newer than any manylinux policy allows");
  return d;
}

}  // namespace opforge::wheel
