// The python-abi tag of a wheel's files, read from their ELF: the CPython symbols they leave for
// the interpreter, the PyInit_* they export, the libpython they link and their names' suffix.
// Which symbols are the stable ABI, and which CPython versions export each, is
// toolchains/cpython-symbols.toml (scripts/cpython-symbols measured it), compiled in.
#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <unordered_map>

#include "util/strings.h"
#include "wheel/wheel.h"

namespace opforge::wheel {

namespace {

struct CpythonSymbol {
  bool stable = false;
  std::vector<int> minors;  ///< the measured minors whose libpython exports it
};

struct CpythonTable {
  int first = 0, last = 0;  ///< the measured minors
  std::unordered_map<std::string, CpythonSymbol> symbols;
};

/// "6-8,11-13" → {6, 7, 8, 11, 12, 13}.
std::vector<int> minors_of(std::string_view runs) {
  std::vector<int> out;
  for (const auto& run : strings::split(runs, ',')) {
    auto dash = run.find('-');
    if (dash == std::string::npos) continue;
    int a = 0, b = 0;
    std::from_chars(run.data(), run.data() + dash, a);
    std::from_chars(run.data() + dash + 1, run.data() + run.size(), b);
    for (int m = a; m <= b && m - a < 100; ++m) out.push_back(m);
  }
  return out;
}

const CpythonTable& cpython_table() {
  static const CpythonTable t = [] {
    // Compiled in from toolchains/cpython-symbols.toml (cmake/generated.cmake); tests check it parses.
    static constexpr std::string_view text =
#include "opforge/cpython-symbols.toml.inc"
        ;
    CpythonTable out;
    auto table = toml::parse(text, std::string_view("toolchains/cpython-symbols.toml"));
    if (auto* measured = table["measured"].as_array(); measured && measured->size() == 2) {
      out.first = static_cast<int>((*measured)[0].value_or(std::int64_t{0}));
      out.last = static_cast<int>((*measured)[1].value_or(std::int64_t{0}));
    }
    for (auto [section, stable] : {std::pair{"stable", true}, std::pair{"other", false}})
      if (auto* rows = table[section].as_table())
        for (auto& [name, value] : *rows)
          out.symbols[std::string(name.str())] = {stable, minors_of(value.value_or(std::string_view()))};
    return out;
  }();
  return t;
}

/// A name CPython's API spells: Py<Upper>..., Py_..., _Py<Upper>..., _Py_...
bool cpython_spelling(std::string_view s) {
  if (s.starts_with("_")) s.remove_prefix(1);
  return s.size() > 2 && s.starts_with("Py") && ((s[2] >= 'A' && s[2] <= 'Z') || s[2] == '_');
}

std::string_view leaf_of(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

/// "311" for "pkg/_C.cpython-311-x86_64-linux-gnu.so"; empty for any other name.
std::string suffix_version(std::string_view path) {
  std::string_view leaf = leaf_of(path);
  auto at = leaf.find(".cpython-3");
  if (at == std::string_view::npos || !leaf.ends_with(".so")) return "";
  std::string_view rest = leaf.substr(at + 9);  // "311-x86_64-linux-gnu.so"
  std::size_t n = 0;
  while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') ++n;
  return n >= 2 && n < rest.size() && rest[n] == '-' ? std::string(rest.substr(0, n)) : "";
}

/// "311" for "libpython3.11.so.1.0"; empty for any other library.
std::string libpython_version(std::string_view lib) {
  if (!lib.starts_with("libpython3.")) return "";
  std::string_view rest = lib.substr(11);
  std::size_t n = 0;
  while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') ++n;
  return n > 0 ? "3" + std::string(rest.substr(0, n)) : "";
}

bool torch_library(std::string_view lib) {
  return lib.starts_with("libtorch") || lib.starts_with("libc10") || lib.starts_with("libshm");
}

/// "3.11" for "311".
std::string dotted(std::string_view v) {
  return v.empty() ? "" : std::string(v.substr(0, 1)) + "." + std::string(v.substr(1));
}

/// "a, b, c and 91 more", at most three named.
std::string some(const std::vector<std::string>& names) {
  std::vector<std::string> shown(names.begin(),
                                 names.begin() + static_cast<long>(std::min<std::size_t>(3, names.size())));
  std::string s = strings::join(shown, ", ");
  if (names.size() > shown.size()) s += " and " + std::to_string(names.size() - shown.size()) + " more";
  return s;
}

/// "a.so uses" / "a.so, b.so use": the files and the verb that agrees with them.
std::string files_verb(const std::vector<std::string>& files, std::string_view one, std::string_view many) {
  return strings::join(files, ", ") + " " + std::string(files.size() == 1 ? one : many);
}

/// "3.6-3.12" / "3.8, 3.10-3.13": the minors as runs.
std::string minors_text(const std::vector<int>& minors) {
  std::vector<std::string> runs;
  for (std::size_t i = 0; i < minors.size();) {
    std::size_t j = i;
    while (j + 1 < minors.size() && minors[j + 1] == minors[j] + 1) ++j;
    runs.push_back("3." + std::to_string(minors[i]) + (j > i ? "-3." + std::to_string(minors[j]) : ""));
    i = j + 1;
  }
  return strings::join(runs, ", ");
}

/// What the measured CPythons say of `minors` (the ones that export all of a file's symbols).
std::string export_text(const std::vector<int>& minors) {
  const auto& t = cpython_table();
  const std::string of = " (of 3." + std::to_string(t.first) + "-3." + std::to_string(t.last) + ")";
  if (minors.empty()) return "no CPython" + of + " exports them all";
  return "CPython " + minors_text(minors) + of + (minors.size() == 1 ? " exports" : " export") + " them all";
}

bool is_abi3_tag(std::string_view t) { return t.starts_with("cp3") && t.ends_with("-abi3"); }
bool is_version_tag(std::string_view t) {
  auto dash = t.find('-');
  return t.starts_with("cp3") && dash != std::string_view::npos && t.substr(dash + 1) == t.substr(0, dash);
}

/// One file's evidence: "its file name says cpython-311, it exports PyInit__C, it uses
/// _PyType_Lookup, _Py_Dealloc and 92 more CPython symbols outside the stable ABI".
/// `read`: the file's ELF was read (a name alone says nothing of its symbols).
std::string evidence(const PythonUse& u, bool read) {
  std::vector<std::string> parts;
  if (!u.name_version.empty()) parts.push_back("its file name says cpython-" + u.name_version);
  if (u.name_abi3) parts.push_back("its file name says abi3");
  if (!u.libpython.empty()) parts.push_back("it links libpython" + dotted(u.libpython));
  if (!u.init.empty()) parts.push_back("it exports " + strings::join(u.init, ", "));
  if (!u.beyond_stable.empty()) parts.push_back("it uses " + some(u.beyond_stable) + " outside the stable ABI");
  else if (!u.symbols.empty()) parts.push_back("it uses only stable-ABI symbols (" + some(u.symbols) + ")");
  else if (read && u.kind != PythonUse::Kind::none) parts.push_back("it uses no CPython symbol");
  return strings::join(parts, ", ");
}

/// "; CPython 3.6-3.12 (of 3.6-3.13) export them all": which measured CPythons export every
/// CPython symbol `uses` use; empty when they use none.
std::string exports_of(const std::vector<const PythonUse*>& uses) {
  std::vector<int> out;
  bool first = true;
  for (const auto* u : uses) {
    if (u->symbols.empty()) continue;
    if (first) out = u->minors;
    else {
      std::vector<int> both;
      std::set_intersection(out.begin(), out.end(), u->minors.begin(), u->minors.end(), std::back_inserter(both));
      out = std::move(both);
    }
    first = false;
  }
  return first ? "" : "; " + export_text(out);
}

/// The symbols of `uses` that CPython 3.<minor> does not export (a measured minor only), sorted.
std::vector<std::string> missing_in(const std::vector<const PythonUse*>& uses, int minor) {
  const auto& t = cpython_table();
  std::set<std::string> out;
  if (minor < t.first || minor > t.last) return {};
  for (const auto* u : uses)
    for (const auto& s : u->symbols) {
      auto it = t.symbols.find(s);
      if (it == t.symbols.end() || !std::binary_search(it->second.minors.begin(), it->second.minors.end(), minor))
        out.insert(s);
    }
  return {out.begin(), out.end()};
}

}  // namespace

std::pair<int, int> cpython_measured() { return {cpython_table().first, cpython_table().last}; }

PythonUse python_use(std::string_view path, const ElfInfo& elf) {
  const auto& table = cpython_table();
  PythonUse u;
  u.init = elf.python_init;
  u.name_version = suffix_version(path);
  u.name_abi3 = leaf_of(path).ends_with(".abi3.so");
  for (const auto& lib : elf.needed)
    if (auto v = libpython_version(lib); !v.empty()) u.libpython = v;
  bool first = true;
  for (const auto& s : elf.unversioned_undefined) {
    auto it = table.symbols.find(s);
    if (it == table.symbols.end() && !cpython_spelling(s)) continue;
    u.symbols.push_back(s);
    if (it == table.symbols.end() || !it->second.stable) u.beyond_stable.push_back(s);
    const std::vector<int> none;
    const auto& have = it == table.symbols.end() ? none : it->second.minors;
    if (first) u.minors = have;
    else {
      std::vector<int> both;
      std::set_intersection(u.minors.begin(), u.minors.end(), have.begin(), have.end(), std::back_inserter(both));
      u.minors = std::move(both);
    }
    first = false;
  }
  // Stable-ABI symbols first: the private ones (_Py...) say more, so they lead the evidence.
  auto by_interest = [](const std::string& a, const std::string& b) {
    return std::pair{!a.starts_with("_"), a} < std::pair{!b.starts_with("_"), b};
  };
  std::sort(u.beyond_stable.begin(), u.beyond_stable.end(), by_interest);
  if (!u.beyond_stable.empty() || !u.name_version.empty() || !u.libpython.empty()) u.kind = PythonUse::Kind::version;
  else if (!u.symbols.empty() || !u.init.empty() || u.name_abi3) u.kind = PythonUse::Kind::stable;
  return u;
}

AbiDecision abi_tag(const std::vector<std::string>& paths, int floor_minor, const std::map<std::string, ElfInfo>& elfs,
                    const std::vector<std::string>& claimed) {
  AbiDecision d;
  // Every file's use; a path without ELF info counts by its name alone.
  std::map<std::string, PythonUse> uses;
  for (const auto& p : paths) {
    auto elf = elfs.find(p);
    PythonUse u;
    if (elf != elfs.end()) {
      u = python_use(p, elf->second);
      if (std::any_of(elf->second.needed.begin(), elf->second.needed.end(), torch_library)) d.torch_linked.push_back(p);
    } else {
      u.name_version = suffix_version(p);
      u.name_abi3 = leaf_of(p).ends_with(".abi3.so");
      u.kind = !u.name_version.empty() ? PythonUse::Kind::version
               : u.name_abi3           ? PythonUse::Kind::stable
                                       : PythonUse::Kind::none;
    }
    if (u.kind != PythonUse::Kind::none) uses.emplace(p, std::move(u));
  }
  std::sort(d.torch_linked.begin(), d.torch_linked.end());
  const bool claims_abi3 = std::any_of(claimed.begin(), claimed.end(), [](auto& t) { return is_abi3_tag(t); });
  std::string claimed_version;  // "311" when the wheel's tag says cp311-cp311
  for (const auto& t : claimed)
    if (is_version_tag(t)) claimed_version = t.substr(2, t.find('-') - 2);
  // Which files tie the wheel to one version: those that say so, and those whose name says neither
  // abi3 nor a version while using CPython, unless the wheel's tag says abi3.
  std::vector<const PythonUse*> tied, stable;
  std::set<std::string> versions;  // from names and libpython
  for (const auto& [p, u] : uses) {
    const bool is_tied = u.kind == PythonUse::Kind::version || (!u.name_abi3 && !claims_abi3);
    (is_tied ? d.extension_files : d.abi3_files).push_back(p);
    (is_tied ? tied : stable).push_back(&u);
    if (!u.name_version.empty()) versions.insert(u.name_version);
    if (!u.libpython.empty()) versions.insert(u.libpython);
  }
  const std::string torch = d.torch_linked.empty()
                                ? ""
                                : "; " + strings::join(d.torch_linked, ", ") +
                                      (d.torch_linked.size() == 1 ? " is" : " are") +
                                      " linked against torch's libraries (libtorch, libc10): it loads only with the "
                                      "torch it was built against";
  auto describe = [&](const std::vector<std::string>& files) {
    std::vector<std::string> out;
    for (const auto& f : files) out.push_back(f + ": " + evidence(uses.at(f), elfs.contains(f)));
    return strings::join(out, "; ");
  };
  auto conflict_with_claim = [&](const std::string& why) {
    if (claimed.empty() || d.python_abi.empty() ||
        std::find(claimed.begin(), claimed.end(), d.python_abi) != claimed.end())
      return;
    d.conflicts.push_back("the wheel's tag says " + strings::join(claimed, ", ") + ", but its files say " +
                          d.python_abi + ": " + why);
  };

  if (uses.empty()) {
    d.python_abi = "py3-none";
    d.reason =
        "no file is a CPython extension (no *.abi3.so or *.cpython-3XY-*.so, none exports PyInit_*, none uses a "
        "CPython symbol): its shared libraries are loaded with ctypes, any Python 3" +
        torch;
    for (const auto& t : claimed)
      if (t != "py3-none" && t.starts_with("cp"))
        d.conflicts.push_back("the wheel's tag says " + t +
                              ", but no file uses CPython: py3-none would let every Python 3 install it");
    return d;
  }

  if (!tied.empty()) {
    const std::string exports = exports_of(tied);
    if (versions.size() > 1) {
      d.reason = strings::join(d.extension_files, ", ") + (d.extension_files.size() == 1 ? " is" : " are") +
                 " tied to several CPython versions (" + strings::join({versions.begin(), versions.end()}, ", ") +
                 "): one wheel cannot be tagged for all; " + describe(d.extension_files) + torch;
      return d;
    }
    std::string v, source;
    if (versions.size() == 1) {
      v = *versions.begin();
    } else if (!claimed_version.empty()) {
      v = claimed_version;
      source = " (no file's name says which CPython: the wheel's tag says cp" + v + "-cp" + v + ")";
    } else {
      d.reason = strings::join(d.extension_files, ", ") + (d.extension_files.size() == 1 ? " needs" : " need") +
                 " one CPython version, and neither a file's name (*.cpython-3XY-*.so) nor the wheel's tag says "
                 "which; " +
                 describe(d.extension_files) + exports + torch;
      if (!claimed.empty())
        d.conflicts.push_back("the wheel's tag says " + strings::join(claimed, ", ") + ", but " +
                              files_verb(d.extension_files, "uses", "use") +
                              " CPython beyond the stable ABI: only the CPython it was built for loads it");
      return d;
    }
    d.python_abi = "cp" + v + "-cp" + v;
    // An extension module (PyInit_*, an extension suffix) and a library that only calls CPython
    // (a helper the extension loads) are named apart: only the first is "an extension".
    std::vector<std::string> modules, helpers;
    for (const auto& f : d.extension_files)
      (uses.at(f).init.empty() && uses.at(f).name_version.empty() ? helpers : modules).push_back(f);
    std::vector<std::string> verdicts;
    if (!modules.empty())
      verdicts.push_back(strings::join(modules, ", ") +
                         (modules.size() == 1 ? " is a CPython extension" : " are CPython extensions") +
                         " for CPython " + dotted(v) + " only");
    if (!helpers.empty())
      verdicts.push_back(strings::join(helpers, ", ") + (helpers.size() == 1 ? " is" : " are") +
                         " built against CPython " + dotted(v) + " only");
    d.reason = strings::join(verdicts, " and ") + ", not the stable ABI" + source + "; " + describe(d.extension_files) +
               exports + torch;
    const int minor = v.size() > 1 ? std::atoi(v.c_str() + 1) : 0;
    if (auto missing = missing_in(tied, minor); !missing.empty())
      d.conflicts.push_back(files_verb(d.extension_files, "uses", "use") + " " + some(missing) + ", which CPython " +
                            dotted(v) + " does not export: it cannot load " +
                            (d.extension_files.size() == 1 ? "it" : "them"));
    conflict_with_claim(files_verb(d.extension_files, "loads", "load") + " only in CPython " + dotted(v));
    return d;
  }

  // Only stable-ABI files.
  const std::string files = strings::join(d.abi3_files, ", ");
  const std::string exports = exports_of(stable);
  if (floor_minor <= 0) {
    d.reason = files + " built against the stable ABI (abi3), for a Python floor not known; " + describe(d.abi3_files) +
               exports + torch;
    return d;
  }
  const std::string floor = "3." + std::to_string(floor_minor);
  d.python_abi = "cp3" + std::to_string(floor_minor) + "-abi3";
  d.reason = files + (d.abi3_files.size() == 1 ? " is a CPython extension" : " are CPython extensions") +
             " built against the stable ABI (abi3, Py_LIMITED_API " + floor + "): CPython " + floor + " and later; " +
             describe(d.abi3_files) + exports + torch;
  if (auto missing = missing_in(stable, floor_minor); !missing.empty())
    d.conflicts.push_back(files_verb(d.abi3_files, "uses", "use") + " " + some(missing) + ", which CPython " + floor +
                          " does not export: the floor is too low");
  conflict_with_claim(files_verb(d.abi3_files, "loads", "load") + " in CPython " + floor + " and later");
  return d;
}

}  // namespace opforge::wheel
