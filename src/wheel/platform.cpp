// What a wheel's ELF files need of the system, and what that allows: the platform tag, a checked
// glibc floor and the distributions it runs on. The data (manylinux policies, the libraries a
// requirement provides, distributions) is toolchains/manylinux-policy.toml, compiled in.
#include <toml++/toml.h>

#include <fnmatch.h>
#include <algorithm>
#include <set>

#include "target/platform.h"
#include "util/strings.h"
#include "wheel/internal.h"
#include "wheel/wheel.h"

namespace opforge::wheel {
namespace {

struct PolicyRow {
  std::string tag;  // "manylinux_2_28"
  int tag_minor = 0;
  int glibc_minor = 0;
  std::string glibcxx, cxxabi, gcc;  // newest allowed
  std::set<std::string> extra;       // non-numeric versions allowed ("CXXABI_TM_1")
};

struct Provided {
  std::string requirement;
  std::vector<std::string> globs;
};

struct Policy {
  std::set<std::string> libraries;
  std::vector<PolicyRow> rows;  // oldest first
  std::vector<Provided> provided;
  std::vector<Distribution> distributions;
};

int minor_of(std::string_view dotted) {  // "2.28" → 28
  auto parts = strings::split(dotted, '.');
  return parts.size() >= 2 ? std::atoi(parts[1].c_str()) : 0;
}

const Policy& policy() {
  static const Policy p = [] {
    // Compiled in from toolchains/manylinux-policy.toml (cmake/generated.cmake); tests check it parses.
    static constexpr std::string_view text =
#include "opforge/manylinux-policy.toml.inc"
        ;
    Policy out;
    auto table = toml::parse(text, std::string_view("toolchains/manylinux-policy.toml"));
    auto strings_of = [](const toml::node_view<toml::node>& n) {
      std::vector<std::string> v;
      if (auto* a = n.as_array())
        for (auto& e : *a) v.push_back(e.value_or(std::string()));
      return v;
    };
    for (auto& l : strings_of(table["libraries"])) out.libraries.insert(l);
    for (auto& node : *table["policy"].as_array()) {
      auto& r = *node.as_table();
      PolicyRow row;
      row.tag = r["tag"].value_or(std::string());
      row.tag_minor = std::atoi(row.tag.substr(row.tag.rfind('_') + 1).c_str());
      row.glibc_minor = minor_of(r["glibc"].value_or(std::string()));
      row.glibcxx = r["glibcxx"].value_or(std::string());
      row.cxxabi = r["cxxabi"].value_or(std::string());
      row.gcc = r["gcc"].value_or(std::string());
      for (auto& e : strings_of(toml::node_view<toml::node>(r["extra"].node()))) row.extra.insert(e);
      out.rows.push_back(std::move(row));
    }
    for (auto& node : *table["provided"].as_array()) {
      auto& r = *node.as_table();
      out.provided.push_back(
          {r["requirement"].value_or(std::string()), strings_of(toml::node_view<toml::node>(r["libraries"].node()))});
    }
    for (auto& node : *table["distribution"].as_array()) {
      auto& r = *node.as_table();
      out.distributions.push_back({r["name"].value_or(std::string()), minor_of(r["glibc"].value_or(std::string())),
                                   r["glibcxx"].value_or(std::string()), r["cxxabi"].value_or(std::string())});
    }
    return out;
  }();
  return p;
}

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

bool numeric(std::string_view v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

bool version_le(std::string_view a, std::string_view b) {
  auto x = numbers(a), y = numbers(b);
  std::size_t n = std::max(x.size(), y.size());
  x.resize(n), y.resize(n);
  return x <= y;
}

// Splits "GLIBCXX_3.4.29" into {"GLIBCXX", "3.4.29"}, "GLIBC_ABI_DT_RELR" into {"GLIBC", "ABI_DT_RELR"}.
std::pair<std::string, std::string> split_version(const std::string& v) {
  auto us = v.find('_');
  if (us == std::string::npos) return {v, ""};
  return {v.substr(0, us), v.substr(us + 1)};
}

bool checked_family(const std::string& family) {
  return family == "GLIBC" || family == "GLIBCXX" || family == "CXXABI" || family == "GCC";
}

/// The requirement that provides `lib`, or nullptr.
const Provided* provider(const std::string& lib, const std::vector<std::string>& requirements) {
  for (const auto& p : policy().provided) {
    if (std::find(requirements.begin(), requirements.end(), p.requirement) == requirements.end()) continue;
    for (const auto& glob : p.globs)
      if (::fnmatch(glob.c_str(), lib.c_str(), 0) == 0) return &p;
  }
  return nullptr;
}

/// Does `row` allow the version `v` ("GLIBC_2.34") of a checked family?
bool allows(const PolicyRow& row, const std::string& v) {
  auto [family, number] = split_version(v);
  if (!numeric(number)) return row.extra.contains(v);
  if (family == "GLIBC") {
    auto n = numbers(number);
    return n.size() >= 2 && n[0] == 2 && n[1] <= row.glibc_minor;
  }
  const std::string& limit = family == "GLIBCXX" ? row.glibcxx : family == "CXXABI" ? row.cxxabi : row.gcc;
  return version_le(number, limit);
}

/// Every checked version the files need of libraries no requirement provides, with who needs it.
struct Need {
  std::string file, library, version;
};
std::vector<Need> needs_of(const std::map<std::string, ElfInfo>& elfs, const std::vector<std::string>& requirements) {
  std::vector<Need> out;
  for (const auto& [path, info] : elfs)
    for (const auto& [lib, versions] : info.version_needs) {
      if (provider(lib, requirements)) continue;
      for (const auto& v : versions)
        if (checked_family(split_version(v).first)) out.push_back({path, lib, v});
    }
  return out;
}

/// Libraries outside every manylinux policy (and not provided), one reason each.
std::vector<std::string> foreign_libraries(const std::map<std::string, ElfInfo>& elfs,
                                           const std::vector<std::string>& requirements,
                                           std::vector<std::string>* provided) {
  std::vector<std::string> reasons;
  for (const auto& [path, info] : elfs)
    for (const auto& lib : info.needed) {
      if (lib.starts_with("libcuda.so"))
        reasons.push_back(path + " links " + lib +
                          ", which must be opened with dlopen (the driver is not on any "
                          "manylinux policy)");
      else if (auto* p = provider(lib, requirements); p && provided)
        provided->push_back(path + " links " + lib + ", which " + p->requirement +
                            " (a requirement of the wheel) provides");
      else if (!p && !policy().libraries.contains(lib))
        reasons.push_back(path + " needs " + lib + ", which is not on any manylinux policy");
    }
  return reasons;
}

bool fits(const std::vector<Need>& needs, const PolicyRow& row) {
  return std::all_of(needs.begin(), needs.end(), [&](const Need& n) { return allows(row, n.version); });
}

/// The one platform of `elfs`' machines, or nullptr with `mixed` saying which files are which.
const target::Platform* one_machine(const std::map<std::string, ElfInfo>& elfs, std::vector<std::string>& mixed) {
  std::map<std::uint16_t, std::vector<std::string>> by_machine;
  for (const auto& [path, info] : elfs) by_machine[info.machine].push_back(path);
  const target::Platform* only = by_machine.size() == 1 ? target::platform_of_elf(by_machine.begin()->first) : nullptr;
  if (only) return only;
  for (const auto& [machine, paths] : by_machine) {
    std::vector<std::string> shown(paths.begin(), paths.begin() + std::min<std::size_t>(3, paths.size()));
    mixed.push_back(machine_text(machine) + ": " + strings::join(shown, ", ") + (paths.size() > 3 ? ", ..." : ""));
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> required_names(std::string_view metadata) {
  std::vector<std::string> out;
  for (const auto& value : header_values(metadata, "Requires-Dist")) {
    std::size_t end = 0;
    while (end < value.size() && (std::isalnum(static_cast<unsigned char>(value[end])) || value[end] == '-' ||
                                  value[end] == '_' || value[end] == '.'))
      ++end;
    // An extra's requirement (`; extra == "x"`) is not always installed.
    if (end > 0 && value.find("extra") == std::string::npos) {
      auto name = normalize_name(value.substr(0, end));
      std::replace(name.begin(), name.end(), '_', '-');
      out.push_back(name);
    }
  }
  return out;
}

PlatformDecision platform_tag(const std::map<std::string, ElfInfo>& elfs,
                              const std::vector<std::string>& requirements) {
  PlatformDecision d;
  if (elfs.empty()) {
    d.platform = "any";
    d.reasons.push_back("the wheel holds no ELF file");
    return d;
  }
  const target::Platform* machine = one_machine(elfs, d.mixed);
  if (!machine) {
    d.platform = "mixed";
    d.reasons.push_back("its ELF files are not all code of one platform opforge builds for (" +
                        strings::join(d.mixed, "; ") + ")");
    return d;
  }
  d.machine = std::string(machine->name);
  const std::string suffix = "_" + d.machine;
  d.platform = "linux" + suffix;
  const auto needs = needs_of(elfs, requirements);
  if (int glibc = system_needs(elfs, requirements).glibc_minor) d.glibc_minor = glibc;
  else d.glibc_minor = 0;
  d.reasons = foreign_libraries(elfs, requirements, &d.provided);
  if (!d.reasons.empty()) return d;
  // The oldest policy that allows every need. Tags name only the policies the ecosystem defines
  // (auditwheel's list), so that `auditwheel show` agrees; past the table, the glibc minor itself.
  const auto& rows = policy().rows;
  // A machine's first manylinux is its floor (aarch64 had none before manylinux2014, glibc 2.17).
  for (const auto& row : rows)
    if (row.tag_minor >= machine->manylinux_floor_minor && fits(needs, row)) {
      d.platform = row.tag + suffix;
      return d;
    }
  PolicyRow newest = rows.back();
  newest.glibc_minor = std::max(newest.glibc_minor, *d.glibc_minor);
  if (fits(needs, newest)) {
    d.platform = "manylinux_2_" + std::to_string(*d.glibc_minor) + suffix;
    return d;
  }
  std::set<std::string> seen;
  for (const auto& n : needs)
    if (!allows(newest, n.version) && seen.insert(n.file + n.version).second)
      d.reasons.push_back(n.file + " needs " + n.version + ", newer than any manylinux policy allows");
  return d;
}

std::string machine_text(std::uint16_t e_machine) {
  if (const auto* p = target::platform_of_elf(e_machine))
    return std::string(p->code_name) + " code (" + std::string(p->name) + ")";
  return "e_machine " + std::to_string(e_machine) + " (a machine opforge builds for no wheel)";
}

std::string SystemNeeds::str() const {
  std::vector<std::string> parts;
  if (glibc_minor) parts.push_back("glibc 2." + std::to_string(glibc_minor));
  if (!glibcxx.empty()) parts.push_back("libstdc++ GLIBCXX_" + glibcxx);
  if (!cxxabi.empty()) parts.push_back("CXXABI_" + cxxabi);
  return parts.empty() ? "nothing versioned of glibc or libstdc++" : strings::join(parts, ", ");
}

SystemNeeds system_needs(const std::map<std::string, ElfInfo>& files, const std::vector<std::string>& requirements) {
  SystemNeeds s;
  for (const auto& n : needs_of(files, requirements)) {
    auto [family, number] = split_version(n.version);
    if (!numeric(number)) continue;
    if (family == "GLIBC") {
      auto v = numbers(number);
      if (v.size() >= 2 && v[0] == 2) s.glibc_minor = std::max(s.glibc_minor, v[1]);
    } else if (family == "GLIBCXX" && (s.glibcxx.empty() || !version_le(number, s.glibcxx))) {
      s.glibcxx = number;
    } else if (family == "CXXABI" && (s.cxxabi.empty() || !version_le(number, s.cxxabi))) {
      s.cxxabi = number;
    }
  }
  return s;
}

const std::vector<Distribution>& distributions() { return policy().distributions; }

std::vector<std::string> distributions_for(const SystemNeeds& needs, Meets meets) {
  std::vector<std::string> out;
  for (const auto& d : distributions()) {
    bool ok = needs.glibc_minor <= d.glibc_minor && (needs.glibcxx.empty() || version_le(needs.glibcxx, d.glibcxx)) &&
              (needs.cxxabi.empty() || version_le(needs.cxxabi, d.cxxabi));
    if (ok == (meets == Meets::yes)) out.push_back(d.name + " (glibc 2." + std::to_string(d.glibc_minor) + ")");
  }
  return out;
}

Result<int> parse_glibc_floor(std::string_view text) {
  std::string t(strings::trim(text));
  if (t.starts_with("manylinux_")) t = t.substr(10);
  std::replace(t.begin(), t.end(), '_', '.');
  std::vector<std::string> known;
  for (const auto& row : policy().rows) {
    known.push_back("2." + std::to_string(row.tag_minor));
    if (t == known.back()) return row.tag_minor;
  }
  return bad_input("glibc floor '" + strings::cut(std::string(text)) + "' names no manylinux policy",
                   "write one of " + strings::join(known, ", ") + " (or manylinux_2_28 and the like)");
}

std::vector<std::string> floor_violations(const std::map<std::string, ElfInfo>& elfs, int floor_minor,
                                          const std::vector<std::string>& requirements) {
  const PolicyRow* row = nullptr;
  for (const auto& r : policy().rows)
    if (r.tag_minor == floor_minor) row = &r;
  std::vector<std::string> out = foreign_libraries(elfs, requirements, nullptr);
  if (!row) {
    out.push_back("glibc floor 2." + std::to_string(floor_minor) + " names no manylinux policy");
    return out;
  }
  // One line per file and library: each version above the floor with the symbols that need it.
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> lines;
  for (const auto& n : needs_of(elfs, requirements)) {
    if (allows(*row, n.version)) continue;
    std::string item = n.version;
    const auto& syms = elfs.at(n.file).version_symbols;
    if (auto it = syms.find(n.version); it != syms.end() && !it->second.empty()) {
      std::vector<std::string> shown(it->second.begin(),
                                     it->second.begin() + std::min<std::size_t>(6, it->second.size()));
      item += " (" + strings::join(shown, ", ") + (it->second.size() > 6 ? ", ..." : "") + ")";
    }
    lines[{n.file, n.library}].push_back(item);
  }
  for (auto& [key, items] : lines) {
    std::sort(items.begin(), items.end(), [](const std::string& a, const std::string& b) { return b < a; });
    out.push_back(key.first + ": " + strings::join(items, ", ") + " of " + key.second);
  }
  return out;
}

Status check_floor(const std::map<std::string, ElfInfo>& elfs, int floor_minor,
                   const std::vector<std::string>& requirements) {
  auto violations = floor_violations(elfs, floor_minor, requirements);
  if (violations.empty()) return {};
  const auto needs = system_needs(elfs, requirements);
  std::string message = "the wheel breaks its glibc floor 2." + std::to_string(floor_minor) + " (manylinux_2_" +
                        std::to_string(floor_minor) + "): it needs " + needs.str() + "\n";
  for (const auto& v : violations) message += "  " + v + "\n";
  message.pop_back();
  return failure(message, "build inside a root of a distribution with glibc 2." + std::to_string(floor_minor) +
                              " or older (opforge build RECIPE --root DIR; docs/older-clusters.md), or raise the floor "
                              "([wheel] glibc, --glibc); nothing was written to dist/");
}

}  // namespace opforge::wheel
