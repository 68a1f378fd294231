#include "devices/nodes.h"

#include <nlohmann/json.hpp>

#include <map>
#include <set>

#include "util/json.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace opforge::devices {

namespace {

using json = nlohmann::json;

std::string capability_str(int major, int minor) { return std::to_string(major) + "." + std::to_string(minor); }

/// Marketing names make the warning readable; unknown majors just show the number.
std::string generation(int major, int minor) {
  switch (major) {
    case 6: return "Pascal";
    case 7: return minor >= 5 ? "Turing" : "Volta";
    case 8: return minor >= 9 ? "Ada" : "Ampere";
    case 9: return "Hopper";
    case 10:
    case 11:
    case 12: return "Blackwell";
    default: return "sm_" + std::to_string(major) + std::to_string(minor);
  }
}

}  // namespace

Result<NodeReport> parse_node_report(const fs::path& file, std::string_view json_text) {
  auto parsed = util::json_parse_checked(json_text);
  if (!parsed)
    return bad_input(file.string() + ": " + parsed.error().message,
                     "give the output of `opforge doctor --json` from each node");
  json j = std::move(*parsed);
  if (!j.is_object())
    return bad_input(file.string() + ": not a JSON object",
                     "give the output of `opforge doctor --json` from each node");
  NodeReport node;
  node.file = file;
  const json* list = nullptr;
  if (j.contains("gpus")) {
    const json& g = j["gpus"];
    if (g.is_array()) list = &g;
    else if (g.is_object() && g.contains("devices") && g["devices"].is_array()) list = &g["devices"];
  }
  if (!list)
    return bad_input(file.string() + ": no \"gpus\" list in this report",
                     "give the output of `opforge doctor --json` from each node");
  // A report is untrusted text: every field is checked for its type before it is read (a
  // wrong-typed field is exit 2, never an escaped JSON exception).
  const std::string hint = "regenerate the report with `opforge doctor --json`";
  int position = 0;
  for (const auto& d : *list) {
    auto wrong = [&](const std::string& what) {
      return bad_input(file.string() + ": GPU entry " + std::to_string(position) + ": " + what, hint);
    };
    if (!d.is_object()) return wrong("is not a JSON object");
    auto text = [&](const char* key) -> Result<std::optional<std::string>> {
      auto it = d.find(key);
      if (it == d.end()) return std::optional<std::string>();
      if (!it->is_string()) return wrong(std::string("\"") + key + "\" must be a string");
      return std::optional<std::string>(it->get<std::string>());
    };
    Gpu gpu;
    gpu.index = position;
    if (auto it = d.find("index"); it != d.end()) {
      if (!it->is_number_integer() || it->get<std::int64_t>() < 0 || it->get<std::int64_t>() > 1 << 20)
        return wrong("\"index\" must be a GPU number (an integer from 0)");
      gpu.index = static_cast<int>(it->get<std::int64_t>());
    }
    gpu.name = OPFORGE_TRY(text("name")).value_or("GPU " + std::to_string(gpu.index));
    std::string cap = OPFORGE_TRY(text(d.contains("capability") ? "capability" : "compute_capability")).value_or("");
    // MAJOR.MINOR, both whole numbers (9.0, 12.0).
    auto dot = cap.find('.');
    auto major = numbers::parse_int<int>(std::string_view(cap).substr(0, dot));
    auto minor = dot == std::string::npos ? numbers::parse_int<int>("")
                                          : numbers::parse_int<int>(std::string_view(cap).substr(dot + 1));
    if (!major || !minor || *major <= 0 || *minor < 0 || *major > 99 || *minor > 99)
      return bad_input(file.string() + ": GPU " + std::to_string(gpu.index) + " (" + strings::cut(gpu.name) +
                           ") has capability \"" + strings::cut(cap) + "\", expected MAJOR.MINOR such as \"9.0\"",
                       hint);
    gpu.major = *major;
    gpu.minor = *minor;
    gpu.uuid = OPFORGE_TRY(text("uuid")).value_or("");
    node.gpus.push_back(std::move(gpu));
    ++position;
  }
  return node;
}

Result<NodesSummary> merge_nodes(probe::FileSystem& fs, const std::vector<fs::path>& reports) {
  if (reports.empty()) return bad_input("no node reports given", "pass one `doctor --json` file per node");
  NodesSummary s;
  // capability → the files of the nodes that have it
  std::map<std::pair<int, int>, std::set<std::string>> kinds;
  for (const auto& file : reports) {
    auto text = fs.read_file(file);
    if (!text)
      return bad_input("cannot read the node report " + file.string() + ": " + text.error().message,
                       "run `opforge doctor --json > NODE.json` on each node");
    auto node = OPFORGE_TRY(parse_node_report(file, *text));
    if (node.gpus.empty())
      s.warnings.push_back(file.string() + ": no GPU found on this node; it adds nothing to the arch list");
    for (const auto& g : node.gpus) kinds[{g.major, g.minor}].insert(file.string());
    s.nodes.push_back(std::move(node));
  }
  for (const auto& [cap, files] : kinds) s.arches.push_back(target::Arch{cap.first, cap.second, 0, false});
  if (!s.arches.empty()) s.arches.back().ptx = true;
  for (const auto& a : s.arches) {
    if (!s.arch_list.empty()) s.arch_list += ";";
    s.arch_list += capability_str(a.major, a.minor) + (a.ptx ? "+PTX" : "");
  }
  std::set<std::string> generations;
  for (const auto& [cap, files] : kinds) generations.insert(generation(cap.first, cap.second));
  if (generations.size() > 1) {
    std::string what;
    for (const auto& [cap, files] : kinds) {
      what += (what.empty() ? "" : "; ") + generation(cap.first, cap.second) + " " +
              capability_str(cap.first, cap.second) + " on";
      for (const auto& f : files) what += " " + f;
    }
    s.warnings.push_back("mixed GPU generations (" + what +
                         "): the wheel carries code for each, "
                         "and synchronous training across them runs at the pace of the slowest");
  }
  return s;
}

}  // namespace opforge::devices
