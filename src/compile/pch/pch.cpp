#include "compile/pch/pch.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

#include "cache/layout.h"
#include "compiler/host.h"
#include "probe/links.h"
#include "settings/settings.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/json_read.h"
#include "util/strings.h"

namespace opforge::compile::pch {

namespace {

/// Options whose value is the next argument (gcc's and clang's spelling).
bool takes_value(std::string_view a) {
  static const std::set<std::string_view> k = {"-o",
                                               "-MF",
                                               "-MT",
                                               "-MQ",
                                               "-I",
                                               "-isystem",
                                               "-iquote",
                                               "-idirafter",
                                               "-include",
                                               "-imacros",
                                               "-x",
                                               "-D",
                                               "-U",
                                               "-L",
                                               "-l",
                                               "-Xlinker",
                                               "-Xpreprocessor",
                                               "-Xassembler",
                                               "-iprefix",
                                               "-iwithprefix",
                                               "-isysroot",
                                               "-aux-info",
                                               "-arch",
                                               "--param",
                                               "-include-pch",
                                               "-Xclang",
                                               "-target",
                                               "-z"};
  return k.contains(a);
}

bool is_cxx_source(std::string_view name) {
  for (std::string_view s : {".cpp", ".cc", ".cxx", ".c++", ".cp", ".CPP", ".C"})
    if (name.size() > s.size() && name.ends_with(s)) return true;
  return false;
}

/// Whether `dir` is `tree` or inside it (lexically).
bool inside(const fs::path& dir, const fs::path& tree) {
  if (tree.empty()) return false;
  const auto d = dir.lexically_normal(), t = tree.lexically_normal();
  auto [a, b] = std::mismatch(t.begin(), t.end(), d.begin(), d.end());
  return a == t.end() || (std::next(a) == t.end() && a->empty());
}

std::string file_stamp(const probe::FileSystem& fs, const fs::path& p) {
  auto st = fs.stamp(p);
  return st ? std::to_string(st->size) + ":" + std::to_string(st->mtime_ns) : "none";
}

/// `#include <x>` / `#include "x"` → {x, quoted}; nullopt for anything else (a macro include).
std::optional<std::pair<std::string, bool>> include_target(std::string_view rest) {
  rest = strings::trim(rest);
  if (rest.size() < 3) return std::nullopt;
  const char open = rest[0];
  const char close = open == '<' ? '>' : open == '"' ? '"' : 0;
  if (!close) return std::nullopt;
  const auto end = rest.find(close, 1);
  if (end == std::string_view::npos) return std::nullopt;
  return std::make_pair(std::string(rest.substr(1, end - 1)), open == '"');
}

/// The logical lines of a C/C++ text: comments blanked, continuations joined.
std::vector<std::string> logical_lines(std::string_view text) {
  std::vector<std::string> out;
  std::string line;
  bool block = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (block) {
      if (c == '*' && i + 1 < text.size() && text[i + 1] == '/') {
        block = false;
        ++i;
        line += ' ';
      } else if (c == '\n') {
        out.push_back(std::move(line));
        line.clear();
      }
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      block = true;
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      out.push_back(std::move(line));
      line.clear();
      continue;
    }
    if (c == '"' || c == '\'') {  // a literal: copied whole, so that "//" inside it is no comment
      line += c;
      for (++i; i < text.size() && text[i] != c && text[i] != '\n'; ++i) {
        line += text[i];
        if (text[i] == '\\' && i + 1 < text.size()) line += text[++i];
      }
      if (i < text.size() && text[i] == c) line += c;
      else if (i < text.size()) --i;
      continue;
    }
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;
      continue;
    }
    if (c == '\n') {
      out.push_back(std::move(line));
      line.clear();
      continue;
    }
    line += c;
  }
  if (!line.empty()) out.push_back(std::move(line));
  return out;
}

/// A directive's name and the rest: "# include <x>" → {"include", "<x>"}.
std::optional<std::pair<std::string, std::string>> directive(std::string_view line) {
  line = strings::trim(line);
  if (line.empty() || line[0] != '#') return std::nullopt;
  line = strings::trim(line.substr(1));
  std::size_t n = 0;
  while (n < line.size() && (std::isalnum(static_cast<unsigned char>(line[n])) || line[n] == '_')) ++n;
  return std::make_pair(std::string(line.substr(0, n)), std::string(strings::trim(line.substr(n))));
}

std::string macro_name(std::string_view rest) {
  std::size_t n = 0;
  while (n < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[n])) || rest[n] == '_')) ++n;
  return std::string(rest.substr(0, n));
}

struct Scanner {
  const probe::FileSystem& fs;
  const std::vector<fs::path>& dirs;
  // Every member after the two references has its own initialiser: the scanner is made as
  // Scanner{fs, dirs}, so a member added later cannot be handed a stray positional value.
  SourceScan out{};
  std::vector<bool> conditionals{};  ///< open #if blocks, true for an include guard
  std::set<std::string> visited{};
  std::string refused{};  ///< the first thing before torch/extension.h a header made of directives cannot hold
  int files = 0;

  fs::path tree{};  ///< the build's tree: a header reached through a link out of it is not read

  /// A project header the scan may read: a file, not reached through a link out of the tree (that
  /// one goes into the prefix as written, as any header from elsewhere).
  bool readable(const fs::path& p) const {
    return fs.resolved_type(p) == probe::FileType::regular && (tree.empty() || !probe::link_out_on_path(fs, tree, p));
  }

  std::optional<fs::path> resolve(const std::string& name, bool quoted, const fs::path& from) const {
    if (quoted && readable(from.parent_path() / name)) return from.parent_path() / name;
    for (const auto& d : dirs)
      if (readable(d / name)) return d / name;
    return std::nullopt;
  }

  void refuse(std::string why) {
    if (refused.empty()) refused = std::move(why);
  }

  /// true once the header is reached (or the scan must stop: out.why_not).
  bool file(const fs::path& path, int depth) {
    if (depth > 16 || ++files > 400) {
      out.why_not = "its includes nest too deep to follow";
      return true;
    }
    auto text = fs.read_file(path, 8u << 20);
    if (!text) return false;
    const auto lines = logical_lines(*text);
    // Where a refusal comes from: the source itself, or "(in types.h)".
    const std::string in = depth == 0 ? std::string() : " (in " + path.filename().string() + ")";
    const std::string before = " before " + std::string(kHeader) + in;
    // An include guard (#ifndef G / #define G as the first two directives) is no conditional.
    std::string guard;
    int directives = 0;
    for (const auto& line : lines) {
      auto d = directive(line);
      if (!d) {
        // Code before the header would follow it once the header is forced first.
        if (!strings::trim(line).empty()) refuse("has code" + before);
        continue;
      }
      ++directives;
      const auto& [name, rest] = *d;
      if (directives == 1 && name == "ifndef") guard = macro_name(rest);
      if (directives == 2 && !guard.empty() && !(name == "define" && macro_name(rest) == guard)) guard.clear();
      if (name == "include") {
        auto target = include_target(rest);
        if (!target) {
          refuse("includes a header named by a macro" + before);
          continue;
        }
        if (target->first == kHeader) {
          if (std::count(conditionals.begin(), conditionals.end(), false) > 0) {
            out.why_not = "includes " + std::string(kHeader) + " inside an #if" + in;
            return true;
          }
          if (!refused.empty()) {
            out.why_not = refused;
            return true;
          }
          out.reaches_header = true;
          return true;
        }
        // A project header is followed (its directives become the prefix's); any other header goes
        // into the prefix as it is written, in order, so that the made header reads exactly what
        // the file reads before torch/extension.h.
        auto found = resolve(target->first, target->second, path);
        if (!found) {
          out.prefix.push_back("#include " +
                               (target->second ? "\"" + target->first + "\"" : "<" + target->first + ">"));
          continue;
        }
        if (!visited.insert(found->lexically_normal().string()).second) continue;
        if (this->file(*found, depth + 1)) return true;
      } else if (name == "if" || name == "ifdef" || name == "ifndef") {
        const bool is_guard = directives == 1 && name == "ifndef";
        if (!is_guard) refuse("has an #" + name + before);
        conditionals.push_back(is_guard);
      } else if (name == "elif" || name == "else") {
        refuse("has an #" + name + before);
      } else if (name == "endif") {
        if (!conditionals.empty()) conditionals.pop_back();
      } else if (name == "define" || name == "undef") {
        const std::string m = macro_name(rest);
        if (directives == 2 && m == guard) continue;
        out.prefix.push_back("#" + name + " " + rest);
        out.macros.insert(m);
      } else if (name == "pragma") {
        if (strings::trim(rest) != "once") out.prefix.push_back("#pragma " + rest);
      } else if (!name.empty()) {  // #error, #warning, #line, #ident, ...: not carried into a header
        refuse("has an #" + name + before);
      }
    }
    return false;
  }
};

/// The first line of a compiler's complaint, for the log.
std::string first_error(std::string_view out) {
  for (auto line : strings::split(out, '\n'))
    if (line.find("error") != std::string_view::npos) return strings::cut(strings::trim(line), 200);
  return strings::cut(strings::trim(out), 200);
}

/// Output without gcc's -Winvalid-pch lines (ours, not the project's); `reason` gets the first.
std::string drop_pch_warnings(std::string_view out, std::string& reason) {
  std::string kept;
  for (auto line : strings::split(out, '\n')) {
    if (line.find("[-Winvalid-pch]") != std::string_view::npos ||
        line.find(".gch: not used because") != std::string_view::npos ||
        line.find("not a valid precompiled header") != std::string_view::npos) {
      if (reason.empty()) reason = strings::cut(strings::trim(line), 200);
      continue;
    }
    kept += std::string(line) + "\n";
  }
  return kept;
}

}  // namespace

CompileLine parse(const std::vector<std::string>& args) {
  CompileLine c;
  c.args = args;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const std::string next = i + 1 < args.size() ? args[i + 1] : std::string();
    if (takes_value(a)) {
      if (a == "-o") c.output = next;
      else if (a == "-MF") c.depfile = next;
      else if (a == "-I" || a == "-isystem" || a == "-iquote" || a == "-idirafter") c.include_dirs.push_back(next);
      else if (a == "-x") c.language.push_back(next);
      else if (a == "-include" || a == "-imacros" || a == "-include-pch") c.other_mode = true;
      ++i;
      continue;
    }
    if (a == "-c") c.compile = true;
    else if (a == "-MD") c.deps = CompileLine::Deps::all;
    else if (a == "-MMD") c.deps = CompileLine::Deps::user;
    else if (a == "-E" || a == "-S" || a == "-M" || a == "-MM" || a == "-fsyntax-only" ||
             a.starts_with("-save-temps") || a == "-fpch-preprocess" || a == "-")
      c.other_mode = true;
    else if (a.starts_with("-I")) c.include_dirs.push_back(a.substr(2));
    else if (a.starts_with("-x")) c.language.push_back(a.substr(2));
    else if (a.starts_with("-o") && a.size() > 2) c.output = a.substr(2);
    else if (!a.starts_with("-")) c.sources.push_back(a);
  }
  return c;
}

std::string not_eligible(const CompileLine& c) {
  if (!c.compile) return "not a compile (-c)";
  if (c.other_mode) return "a preprocess, assembly or forced-include command line";
  if (c.sources.size() != 1) return "not one source file";
  for (const auto& l : c.language)
    if (l != "c++") return "not C++ (-x " + l + ")";
  if (c.language.empty() && !is_cxx_source(c.sources[0])) return "not a C++ source";
  if (c.deps != CompileLine::Deps::none && c.depfile.empty()) return "-MD without -MF";
  return {};
}

std::vector<std::string> header_args(const CompileLine& c, const fs::path& tree) {
  std::vector<std::string> out;
  const auto& a = c.args;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string& x = a[i];
    const std::string next = i + 1 < a.size() ? a[i + 1] : std::string();
    if (x == "-o" || x == "-MF" || x == "-MT" || x == "-MQ" || x == "-L" || x == "-l" || x == "-Xlinker") {
      ++i;
      continue;
    }
    if (x == "-I" || x == "-isystem" || x == "-iquote" || x == "-idirafter") {
      if (!(inside(next, tree) || (!tree.empty() && fs::path(next).is_relative()))) {
        out.push_back(x);
        out.push_back(next);
      }
      ++i;
      continue;
    }
    if (x.starts_with("-I") && (inside(x.substr(2), tree) || (!tree.empty() && fs::path(x.substr(2)).is_relative())))
      continue;
    if (x == "-D" && next.starts_with("TORCH_EXTENSION_NAME=")) {
      ++i;
      continue;
    }
    if (takes_value(x)) {
      out.push_back(x);
      out.push_back(next);
      ++i;
      continue;
    }
    if (x == "-c" || x == "-MD" || x == "-MMD" || x == "-MP" || x == "-shared" ||
        x.starts_with("-DTORCH_EXTENSION_NAME=") || x.starts_with("-l") || x.starts_with("-L") ||
        x.starts_with("-Wl,") || x.starts_with("-g") || (x.starts_with("-W") && !x.starts_with("-Wp,")) ||
        (x.starts_with("-o") && x.size() > 2))
      continue;
    if (!x.starts_with("-") && std::find(c.sources.begin(), c.sources.end(), x) != c.sources.end()) continue;
    out.push_back(x);
  }
  return out;
}

bool read_by_headers(std::string_view macro) {
  if (macro.empty() || macro[0] == '_' || macro == "NDEBUG") return true;
  // Prefixes of the macros torch/extension.h and what it includes read (torch, c10, ATen, caffe2,
  // pybind11, Python, CUDA and its libraries, the C++ libraries torch bundles), by their headers.
  for (std::string_view p :
       {"TORCH_", "C10_",     "AT_",    "CAFFE2_", "PYBIND11_", "Py",    "USE_",    "CUDA",   "CU",
        "NV",     "THRUST_",  "HIP",    "ROCM",    "FMT_",      "GLOG_", "GFLAGS_", "EIGEN_", "OMP_",
        "ONNX_",  "CPUINFO_", "SLEEF_", "STRICT_", "BUILD_",    "NO_",   "WITH_",   "HAS_",   "ENABLE_"})
    if (macro.starts_with(p)) return true;
  return false;
}

std::vector<std::string> without_project_macros(const std::vector<std::string>& args,
                                                const std::set<std::string>& consulted) {
  auto keep = [&](std::string_view def) {
    const std::string name = macro_name(def);
    return read_by_headers(name) || consulted.contains(name);
  };
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if ((a == "-D" || a == "-U") && i + 1 < args.size()) {
      if (keep(args[i + 1])) {
        out.push_back(a);
        out.push_back(args[i + 1]);
      }
      ++i;
      continue;
    }
    if ((a.starts_with("-D") || a.starts_with("-U")) && a.size() > 2 && !keep(std::string_view(a).substr(2))) continue;
    out.push_back(a);
  }
  return out;
}

std::string macro_in_reason(std::string_view reason) {
  const auto open = reason.find("because `");
  if (open == std::string_view::npos) return {};
  const auto start = open + 9, end = reason.find('\'', start);
  if (end == std::string_view::npos) return {};
  const std::string name(reason.substr(start, end - start));
  return !name.empty() && macro_name(name) == name ? name : std::string();
}

std::vector<std::string> sibling_sources(std::string_view build_ninja, std::string_view source) {
  // Ninja's lines: "$\n" continues one; "$ ", "$:" and "$$" escape a space, a colon and a dollar.
  struct Build {
    std::string rule;
    std::vector<std::string> inputs;
    std::string vars;  ///< its own variables (CMake's FLAGS, DEFINES…), less per-file ones (…DEP…, …DIR…, …FILE…)
  };
  std::vector<Build> builds;
  std::string line;
  auto statement = [&](const std::string& l) {
    if ((l.starts_with(" ") || l.starts_with("\t")) && !builds.empty()) {
      const auto eq = l.find('=');
      const std::string name(strings::trim(std::string_view(l).substr(0, eq == std::string::npos ? 0 : eq)));
      if (!name.empty() && name.find("DEP") == std::string::npos && name.find("DIR") == std::string::npos &&
          name.find("FILE") == std::string::npos)
        builds.back().vars += std::string(strings::trim(l)) + "\n";
      return;
    }
    if (!l.starts_with("build ")) {
      if (!strings::trim(l).empty()) builds.emplace_back();  // a rule, a pool: ends the last build's variables
      return;
    }
    std::vector<std::string> words;
    std::string w;
    bool any = false;
    auto flush = [&]() {
      if (any) words.push_back(w);
      w.clear();
      any = false;
    };
    for (std::size_t i = 6; i < l.size(); ++i) {
      const char c = l[i];
      if (c == '$' && i + 1 < l.size()) {
        w += l[++i];
        any = true;
      } else if (c == ' ' || c == '\t') {
        flush();
      } else if (c == ':') {  // unescaped: the end of the outputs
        flush();
        words.push_back(":");
      } else {
        w += c;
        any = true;
      }
    }
    flush();
    auto colon = std::find(words.begin(), words.end(), ":");
    if (colon == words.end() || std::next(colon) == words.end()) return;
    Build b;
    b.rule = *std::next(colon);
    for (auto it = std::next(colon, 2); it != words.end() && *it != "|" && *it != "||"; ++it) b.inputs.push_back(*it);
    builds.push_back(std::move(b));
  };
  for (auto raw : strings::split(build_ninja, '\n')) {
    std::size_t dollars = 0;
    while (dollars < raw.size() && raw[raw.size() - 1 - dollars] == '$') ++dollars;
    if (dollars % 2 == 1) {
      line += std::string(raw.substr(0, raw.size() - 1));
      continue;
    }
    line += std::string(raw);
    statement(line);
    line.clear();
  }
  statement(line);
  const std::string mine = fs::path(source).lexically_normal().string();
  const Build* own = nullptr;
  for (const auto& b : builds)
    for (const auto& in : b.inputs)
      if (fs::path(in).lexically_normal().string() == mine) own = &b;
  if (!own) return {};
  std::vector<std::string> out;
  for (const auto& b : builds)
    if (b.rule == own->rule && b.vars == own->vars && b.inputs.size() == 1 && is_cxx_source(b.inputs[0]))
      out.push_back(b.inputs[0]);
  return out;
}

namespace {

/// The value of the compile's -DTORCH_EXTENSION_NAME ("" without one).
std::string extension_name(const CompileLine& c) {
  constexpr std::string_view define = "TORCH_EXTENSION_NAME=";
  for (std::size_t i = 0; i < c.args.size(); ++i) {
    std::string_view a = c.args[i];
    if (a == "-D" && i + 1 < c.args.size()) a = c.args[++i];
    else if (a.starts_with("-D")) a.remove_prefix(2);
    else continue;
    if (a.starts_with(define)) return std::string(a.substr(define.size()));
  }
  return {};
}

}  // namespace

std::string plan_text(const std::vector<PlannedExtension>& extensions) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& e : extensions) all.push_back({{"name", e.name}, {"args", e.args}, {"sources", e.sources}});
  return util::json_dump(nlohmann::json{{"extensions", all}}, 1) + "\n";
}

std::vector<PlannedSource> planned_alike(std::string_view plan, std::string_view extension, const fs::path& tree,
                                         const std::set<std::string>& consulted) {
  const auto doc = util::json_parse(plan);
  if (!doc.is_object() || !doc.contains("extensions") || !doc["extensions"].is_array()) return {};
  struct Entry {
    std::vector<std::string> key, dirs, sources;
  };
  std::vector<Entry> all;
  std::optional<std::size_t> mine;
  for (const auto& e : doc["extensions"]) {
    if (!e.is_object()) continue;
    Entry entry;
    const auto args = util::json_read::texts(e, "args");
    const CompileLine line = parse(args);
    entry.key = without_project_macros(header_args(line, tree), consulted);
    for (const auto& d : line.include_dirs)
      if (fs::path(d).is_relative()) entry.dirs.push_back(d);
    for (const auto& s : util::json_read::texts(e, "sources"))
      if (is_cxx_source(s)) entry.sources.push_back(s);
    if (!extension.empty() && util::json_read::text_or(e, "name") == extension) mine = all.size();
    all.push_back(std::move(entry));
  }
  if (!mine) return {};
  const auto& key = all[*mine].key;
  std::vector<PlannedSource> out;
  std::set<std::string> seen;
  for (const auto& e : all)
    if (e.key == key)
      for (const auto& s : e.sources)
        if (seen.insert(s).second) out.push_back({s, e.dirs});
  return out;
}

fs::path torch_include_dir(const probe::FileSystem& fs, const CompileLine& c, const fs::path& cwd) {
  for (const auto& d : c.include_dirs) {
    const fs::path dir = fs::path(d).is_absolute() ? fs::path(d) : cwd / d;
    if (fs.resolved_type(dir / kHeader) == probe::FileType::regular) return dir;
  }
  return {};
}

std::string entry_key(const probe::FileSystem& fs, const fs::path& compiler, const std::vector<std::string>& args,
                      const fs::path& torch_dir, const std::vector<std::string>& prefix) {
  std::string k = "opforge-pch/3\n" + compiler.string() + "\n" + compiler::stamp(fs, compiler) + "\n";
  for (const auto& l : prefix) k += "prefix " + l + "\n";
  for (const auto& a : args) k += a + "\n";
  k += torch_dir.string() + "\n";
  auto version = fs.read_file(torch_dir.parent_path() / "version.py", 1u << 20);
  k += version ? sha256_hex(*version) : std::string("no version.py");
  k += "\n" + file_stamp(fs, torch_dir / kHeader) + "\n" + file_stamp(fs, torch_dir / "ATen/ATen.h") + "\n";
  return sha256_hex(k).substr(0, 16);
}

SourceScan scan(const probe::FileSystem& fs, const fs::path& source, const std::vector<fs::path>& dirs,
                const fs::path& tree) {
  Scanner s{fs, dirs};
  s.tree = tree;
  s.visited.insert(source.lexically_normal().string());
  if (!tree.empty() && probe::is_within(source, tree))
    if (auto link = probe::link_out_on_path(fs, tree, source)) {
      s.out.why_not = "is reached through " + link->link.string() + ", a link out of the build tree";
      return s.out;
    }
  s.file(source, 0);
  if (!s.out.reaches_header && s.out.why_not.empty())
    s.out.why_not = "does not include " + std::string(kHeader) + " (in its own text or the project's headers)";
  return s.out;
}

std::string header_text(const std::vector<std::string>& prefix) {
  std::string out = "// Written by opforge: the header precompiled beside it";
  out += prefix.empty() ? ".\n" : ", with what the sources read before it.\n";
  for (const auto& l : prefix) out += l + "\n";
  return out + "#include <" + std::string(kHeader) + ">\n";
}

std::map<std::string, std::string> macro_definitions(std::string_view dM) {
  std::map<std::string, std::string> out;
  for (auto line : strings::split(dM, '\n'))
    if (line.starts_with("#define ")) {
      auto name = macro_name(line.substr(8));
      if (!name.empty()) out[name] = std::string(line);
    }
  return out;
}

std::string macro_clash(std::string_view prefix_dM, std::string_view header_dM, const std::set<std::string>& macros) {
  const auto before = macro_definitions(prefix_dM), after = macro_definitions(header_dM);
  for (const auto& m : macros) {
    auto b = before.find(m), a = after.find(m);
    const std::string was = b == before.end() ? "undefined" : b->second,
                      is = a == after.end() ? "undefined" : a->second;
    if (was != is)
      return "torch's headers change " + m + ", which the sources set before including them (" + was + ", then " + is +
             "): their own line, read again after the header, would undo that";
  }
  return {};
}

std::string merge_depfile(std::string_view compile_deps, std::string_view header_deps, std::string_view drop) {
  // The header's prerequisites: everything after its rule's first ':' up to the rule's end.
  std::size_t colon = header_deps.find(": ");
  if (colon == std::string_view::npos) return std::string(compile_deps);
  std::string_view rest = header_deps.substr(colon + 2);
  std::size_t end = 0;
  while (end < rest.size() && !(rest[end] == '\n' && (end == 0 || rest[end - 1] != '\\'))) ++end;
  std::string extra;
  {
    // Its prerequisites one by one (a backslash-newline is a separator; "\ " an escaped space).
    std::string word;
    std::vector<std::string> words;
    const std::string_view text = rest.substr(0, end);
    for (std::size_t i = 0; i <= text.size(); ++i) {
      const char ch = i < text.size() ? text[i] : ' ';
      if (ch == '\\' && i + 1 < text.size() && text[i + 1] != '\n') {
        word += ch;
        word += text[++i];
      } else if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\\') {
        if (!word.empty() && word != drop) words.push_back(word);
        word.clear();
      } else {
        word += ch;
      }
    }
    extra = strings::join(words, " \\\n ");
  }
  // The compile's first rule ends at the first newline not escaped by a backslash.
  std::size_t stop = 0;
  while (stop < compile_deps.size() && !(compile_deps[stop] == '\n' && (stop == 0 || compile_deps[stop - 1] != '\\')))
    ++stop;
  std::string head(strings::trim(compile_deps.substr(0, stop)));
  std::string out = head + (extra.empty() ? "" : " \\\n " + extra) + "\n";
  if (stop < compile_deps.size()) out += std::string(compile_deps.substr(stop + 1));
  return out;
}

Summary summarize(std::string_view log) {
  Summary s;
  std::set<std::string> notes;
  for (auto line : strings::split(log, '\n')) {
    auto f = strings::split(line, '\t');
    if (f.size() < 2) continue;
    const std::string& what = f[0];
    const std::string src = fs::path(f[1]).filename().string();
    const std::string detail = f.size() > 2 ? f[2] : std::string();
    if (what == "made") {
      ++s.made;
      try {
        s.make_seconds += std::stod(detail);
        if (f.size() > 3) s.gch_bytes += std::stoull(f[3]);
      } catch (...) {}
    } else if (what == "used") ++s.used;
    else if (what == "not-used") {
      ++s.not_used;
      notes.insert(src + ": gcc did not use it (" + detail + ")");
    } else if (what == "fallback") {
      ++s.fallback;
      notes.insert(src + ": failed with it, compiled again without it (" + detail + ")");
    } else if (what == "skipped") {
      ++s.skipped;
      notes.insert(src + ": " + detail);
    } else if (what == "busy") ++s.busy;
    else if (what == "plain") ++s.plain;
    else if (what == "first") ++s.first;
  }
  s.notes.assign(notes.begin(), notes.end());
  return s;
}

std::string summary_line(const Summary& s) {
  const unsigned total = s.used + s.not_used + s.fallback + s.skipped + s.busy + s.first;
  char size[32];
  std::snprintf(size, sizeof size, "%.0f MiB", static_cast<double>(s.gch_bytes) / (1024.0 * 1024.0));
  std::string out = "precompiled torch header: ";
  // The seconds come from the build's pch log, which a child writes: a huge or NaN value is shown
  // as 0, never cast out of long's range (undefined behaviour; found by host_compile_fuzz).
  const double secs = s.make_seconds >= 0 && s.make_seconds < 1e9 ? s.make_seconds : 0;
  out += s.made
             ? std::to_string(s.made) + " made (" + std::to_string(static_cast<long>(secs + 0.5)) + " s, " + size + ")"
         : s.used + s.not_used + s.fallback ? std::string("reused from the cache")
                                            : std::string("none made");
  out += ", used by " + std::to_string(s.used) + " of " + std::to_string(total) + " C++ compiles that include " +
         std::string(kHeader);
  if (s.first)
    out += "; " + std::to_string(s.first) + " compiled without it before " + std::to_string(kMakeAt) +
           " compiles needed the same one";
  if (s.busy) out += "; " + std::to_string(s.busy) + " compiled without it while it was being made";
  if (s.fallback + s.not_used + s.skipped)
    out += "; " + std::to_string(s.fallback + s.not_used + s.skipped) + " without it (below)";
  return out;
}

int host_compile(probe::Machine m, const std::vector<std::string>& argv) {
  fs::path compiler, pch_dir;
  std::string launcher;
  std::vector<std::string> args;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--") {
      args.assign(argv.begin() + static_cast<long>(i) + 1, argv.end());
      break;
    }
    if (i + 1 >= argv.size()) break;
    if (argv[i] == "--compiler") compiler = argv[++i];
    else if (argv[i] == "--pch-dir") pch_dir = argv[++i];
    else if (argv[i] == "--launcher") launcher = argv[++i];
  }
  if (compiler.empty()) {
    std::cerr << "opforge: " << kCommand << ": --compiler PATH -- ARGS... expected (the host wrappers run this)\n";
    return 2;
  }
  const auto cwd = m.fs.canonical(".").value_or(fs::path("."));
  auto command = [&](std::vector<std::string> extra) {
    probe::Command c;
    if (!launcher.empty()) c.argv.push_back(launcher);
    c.argv.push_back(compiler.string());
    c.argv.insert(c.argv.end(), args.begin(), args.end());
    c.argv.insert(c.argv.end(), extra.begin(), extra.end());
    c.argv.push_back("-g0");
    return c;
  };
  const auto log_path = settings::pch_log(m.env);
  const CompileLine line = parse(args);
  const std::string source = line.sources.empty() ? std::string() : line.sources[0];
  auto log = [&](std::string_view what, std::string_view detail, std::string_view more = {}) {
    if (!log_path) return;
    std::string l = std::string(what) + "\t" + source + "\t" + std::string(detail);
    if (!more.empty()) l += "\t" + std::string(more);
    for (auto& ch : l)
      if (ch == '\n') ch = ' ';
    (void)m.fs.append_file(*log_path, l + "\n");
  };
  auto plain = [&]() {
    auto c = command({});
    c.output = probe::Output::inherit;
    auto r = m.proc.run(c);
    if (!r) {
      std::cerr << "opforge: cannot run " << compiler.string() << ": " << r.error().render() << "\n";
      return 127;
    }
    return r->signal ? 128 + r->signal : r->exit_code;
  };
  if (pch_dir.empty() || !not_eligible(line).empty()) return plain();
  const fs::path torch_dir = torch_include_dir(m.fs, line, cwd);
  if (torch_dir.empty()) return plain();
  const fs::path tree = settings::pch_tree(m.env);
  std::vector<fs::path> project_dirs;
  for (const auto& d : line.include_dirs) {
    const fs::path dir = fs::path(d).is_absolute() ? fs::path(d) : cwd / d;
    if (tree.empty() || inside(dir, tree)) project_dirs.push_back(dir);
  }
  const fs::path src_path = fs::path(source).is_absolute() ? fs::path(source) : cwd / source;
  const SourceScan found = scan(m.fs, src_path, project_dirs, tree);
  if (!found.reaches_header) {
    if (found.why_not.starts_with("does not include")) {
      log("plain", "");
      return plain();
    }
    log("skipped", found.why_not);
    return plain();
  }
  // A project folder that holds a name torch's headers include would be shadowed by the header
  // made without it.
  for (const auto& d : tree.empty() ? std::vector<fs::path>{} : project_dirs)
    for (const char* top : {"torch", "ATen", "c10", "caffe2", "pybind11", "Python.h"})
      if (m.fs.type_of(d / top) != probe::FileType::none && d != torch_dir) {
        log("skipped",
            "the project's include folder " + d.string() + " holds " + top + ", which torch's headers include");
        return plain();
      }

  // Macros gcc has named as read by a header made without them (see without_project_macros).
  const fs::path consulted_file = pch_dir / ".consulted";
  std::set<std::string> consulted;
  if (auto text = m.fs.read_file(consulted_file, 1u << 20))
    for (auto l : strings::split(*text, '\n'))
      if (!strings::trim(l).empty()) consulted.insert(std::string(strings::trim(l)));
  const auto key_args = without_project_macros(header_args(line, tree), consulted);
  const fs::path entry = pch_dir / entry_key(m.fs, compiler, key_args, torch_dir, found.prefix);
  const fs::path header = entry / "extension.h", done = entry / "done", failed = entry / "failed";
  if (m.fs.type_of(failed) == probe::FileType::regular) {
    auto why = m.fs.read_file(failed);
    log("skipped", "the header could not be made: " + std::string(strings::trim(why ? *why : std::string())));
    return plain();
  }
  // Sources by their path in the scratch tree: a second build of the same project counts once.
  auto named = [&](const fs::path& p) {
    return !tree.empty() && inside(p, tree) ? p.lexically_normal().lexically_relative(tree.lexically_normal()).string()
                                            : p.lexically_normal().string();
  };
  const fs::path wanted = pch_dir / ("." + entry.filename().string() + ".wanted");
  if (m.fs.type_of(done) != probe::FileType::regular) {
    // Made once kMakeAt compiles are known to need it: those that wanted it before, and this
    // extension's files that read the same before torch's header; until then a compile goes on
    // without it, as do the others while it is being made.
    (void)m.fs.create_directories(pch_dir);
    std::set<std::string> known;
    auto before = m.fs.read_file(wanted, 1u << 20);
    for (auto l : strings::split(before ? *before : std::string(), '\n'))
      if (!l.empty()) known.insert(std::string(l));
    const std::string me = named(src_path);
    const bool recorded = known.contains(me);
    known.insert(me);
    // Another file counts when it reads the same directives before the header.
    auto count = [&](const fs::path& p, const std::vector<fs::path>& dirs) {
      if (known.contains(named(p))) return;
      const SourceScan theirs = scan(m.fs, p, dirs, tree);
      if (theirs.reaches_header && theirs.prefix == found.prefix) known.insert(named(p));
    };
    if (known.size() < kMakeAt)
      if (auto ninja = m.fs.read_file(cwd / "build.ninja", 8u << 20))
        for (const auto& other : sibling_sources(*ninja, source))
          count(fs::path(other).is_absolute() ? fs::path(other) : cwd / other, project_dirs);
    // The other extensions of a build that planned them (a DeepSpeed op's first file would
    // otherwise not know that later ops' files share its header); only files inside the tree.
    if (known.size() < kMakeAt && !tree.empty())
      if (auto plan = m.fs.read_file(tree / kPlanFile, 4u << 20))
        for (const auto& other : planned_alike(*plan, extension_name(line), tree, consulted)) {
          const fs::path p = tree / other.source;
          if (!inside(p, tree)) continue;
          std::vector<fs::path> dirs;
          for (const auto& d : other.include_dirs)
            if (inside(tree / d, tree)) dirs.push_back(tree / d);
          count(p, dirs);
          if (known.size() >= kMakeAt) break;
        }
    if (known.size() < kMakeAt) {
      if (!recorded) (void)m.fs.append_file(wanted, me + "\n");
      log("first", "");
      return plain();
    }
    auto lock = m.fs.try_lock(cache::entry_lock(entry));
    if (!lock || !*lock) {
      log("busy", "");
      return plain();
    }
    if (m.fs.type_of(done) != probe::FileType::regular) {
      const auto t0 = std::chrono::steady_clock::now();
      (void)m.fs.remove_all(entry);
      auto made = [&]() -> Status {
        OPFORGE_CHECK(m.fs.create_directories(entry));
        OPFORGE_CHECK(m.fs.write_file_atomic(header, header_text(found.prefix)));
        auto run = [&](std::vector<std::string> tail) -> Status {
          probe::Command c;
          c.argv.push_back(compiler.string());
          c.argv.insert(c.argv.end(), key_args.begin(), key_args.end());
          c.argv.insert(c.argv.end(), tail.begin(), tail.end());
          c.cwd = cwd;
          auto r = m.proc.run(c);
          if (!r) return opforge::unexpected(r.error());
          if (!r->ok()) return failure(first_error(r->err + r->out));
          return {};
        };
        OPFORGE_CHECK(run({"-g0", "-x", "c++-header", header.string(), "-o", (entry / "extension.h.gch").string(),
                           "-MD", "-MF", (entry / "deps.all").string()}));
        // The macros it leaves defined (and the user headers it reads, for -MMD compiles).
        OPFORGE_CHECK(run({"-g0", "-x", "c++-header", "-E", "-dM", header.string(), "-o",
                           (entry / "header.dM").string(), "-MMD", "-MF", (entry / "deps.user").string()}));
        if (!found.macros.empty()) {
          // The file's own lines before the include run again after the forced header: a macro of
          // theirs that torch's headers then change would be set back.
          const fs::path alone = entry / "prefix.h";
          OPFORGE_CHECK(m.fs.write_file_atomic(alone, strings::join(found.prefix, "\n") + "\n"));
          OPFORGE_CHECK(run({"-x", "c++-header", "-E", "-dM", alone.string(), "-o", (entry / "prefix.dM").string()}));
          auto before = m.fs.read_file(entry / "prefix.dM");
          auto after = m.fs.read_file(entry / "header.dM");
          if (!before) return opforge::unexpected(before.error());
          if (!after) return opforge::unexpected(after.error());
          if (auto clash = macro_clash(*before, *after, found.macros); !clash.empty()) return failure(clash);
        }
        (void)m.fs.remove(entry / "header.dM");
        (void)m.fs.remove(entry / "prefix.dM");
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const auto gch = m.fs.stamp(entry / "extension.h.gch");
        OPFORGE_CHECK(m.fs.write_file_atomic(entry / cache::kLastUse, ""));
        OPFORGE_CHECK(probe::record_size(m.fs, entry, probe::tree_bytes(m.fs, entry)));
        OPFORGE_CHECK(
            m.fs.write_file_atomic(done, std::to_string(secs) + "\t" + std::to_string(gch ? gch->size : 0) + "\n"));
        return {};
      }();
      if (!made) {
        (void)m.fs.write_file_atomic(failed, made.error().message + "\n");
        log("skipped", "the header could not be made: " + made.error().message);
        return plain();
      }
      (void)m.fs.remove(wanted);
      auto stats = m.fs.read_file(done);
      auto f = strings::split(strings::trim(stats ? *stats : std::string()), '\t');
      // Logged now: the compile that made it may still not use it (a macro it defines first).
      log("made", f.empty() ? "0" : f[0], f.size() > 1 ? f[1] : "0");
    }
  }
  // Held shared while compiling with it, so that `opforge cache prune` waits.
  auto shared = m.fs.try_lock_shared(cache::entry_lock(entry));
  if (!shared || !*shared) return plain();
  (void)m.fs.write_file_atomic(entry / cache::kLastUse, "");
  auto c = command({"-include", header.string(), "-Winvalid-pch"});
  auto r = m.proc.run(c);
  if (!r) return plain();
  std::string reason;
  const std::string out = drop_pch_warnings(r->out, reason), err = drop_pch_warnings(r->err, reason);
  if (!r->ok()) {
    log("fallback", first_error(r->err + r->out));
    std::cerr << "opforge: " << source
              << ": the compile with the precompiled torch header failed; compiling it without\n";
    return plain();
  }
  std::cout << out << std::flush;
  std::cerr << err << std::flush;
  if (!reason.empty()) {
    log("not-used", reason);
    // A macro the header read, left out of its key as the project's: in the key from now on.
    if (auto name = macro_in_reason(reason); !name.empty() && !consulted.contains(name)) {
      auto text = m.fs.read_file(consulted_file, 1u << 20);
      (void)m.fs.write_file_atomic(consulted_file, (text ? *text : std::string()) + name + "\n");
    }
  } else {
    log("used", "");
  }
  if (line.deps != CompileLine::Deps::none && !line.depfile.empty()) {
    const fs::path depfile = fs::path(line.depfile).is_absolute() ? fs::path(line.depfile) : cwd / line.depfile;
    auto mine = m.fs.read_file(depfile);
    auto theirs = m.fs.read_file(entry / (line.deps == CompileLine::Deps::all ? "deps.all" : "deps.user"));
    if (mine && theirs) (void)m.fs.write_file_atomic(depfile, merge_depfile(*mine, *theirs, header.string()));
  }
  return 0;
}

}  // namespace opforge::compile::pch
