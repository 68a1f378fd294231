/// The include scan (compile/pch/pch.h): what a source reads before torch/extension.h, through its
/// logical lines (comments blanked, continuations joined) and the project's quoted headers.
#include <algorithm>
#include <cctype>

#include "compile/pch/detail.h"
#include "compile/pch/pch.h"
#include "probe/links.h"
#include "util/strings.h"

namespace opforge::compile::pch {

std::string macro_name(std::string_view rest) {
  std::size_t n = 0;
  while (n < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[n])) || rest[n] == '_')) ++n;
  return std::string(rest.substr(0, n));
}

namespace {

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

}  // namespace

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

}  // namespace opforge::compile::pch
