/// Which sources share a header (compile/pch/pch.h): the C++ sources a ninja file compiles with the
/// same rule and flags, and the files of a build's planned extensions whose flags give the same key.
#include <algorithm>
#include <iterator>

#include "compile/pch/detail.h"
#include "compile/pch/pch.h"
#include "util/json.h"
#include "util/json_read.h"
#include "util/strings.h"

namespace opforge::compile::pch {

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

}  // namespace opforge::compile::pch
