// `opforge pick`'s printing: the text, the JSON and the error of the same picks (pick.cpp).
#include <algorithm>

#include "rollout/pick.h"
#include "util/strings.h"

namespace opforge::rollout {
namespace {

using json = nlohmann::json;

/// Who takes a wheel on the node when `pick` is not asked: the installer line's subject.
constexpr std::string_view kInstaller = "a variant-aware installer with nvidia-variant-provider 0.0.2";

json check_json(const Check& c) {
  return {{"check", c.name}, {"verdict", verdict_name(c.verdict)}, {"detail", c.detail}};
}

json checks_json(const std::vector<Check>& checks) {
  json out = json::array();
  for (const auto& c : checks) out.push_back(check_json(c));
  return out;
}

std::string checks_text(const std::vector<Check>& checks) {
  std::vector<std::string> out;
  for (const auto& c : checks) out.push_back(c.name + ": " + c.detail);
  return strings::join(out, "; ");
}

/// The URL of an index `relative` to the folder served at `base` (none: the relative path).
std::string pip_url(const std::string& base, const std::string& relative) {
  if (base.empty()) return relative;
  return (base.ends_with("/") ? base : base + "/") + relative;
}

/// The installer line of a project whose installer does not take the pick; empty when it does.
std::string installer_text(const ProjectPick& p) {
  const InstallerChoice& i = p.installer;
  if (i.why.empty()) return {};
  if (!i.wheel) return std::string(kInstaller) + " takes no wheel: " + i.why;
  const bool instead = !p.order.empty();
  std::string out = std::string(kInstaller) + " takes " + *i.wheel +
                    (i.plain   ? std::string(", the plain wheel") + (instead ? ", instead" : "")
                     : instead ? " instead"
                               : "") +
                    ": " + i.why + "; ";
  switch (i.verdict) {
    case Verdict::ok: return out + "that wheel runs here too";
    case Verdict::fails: return out + "that wheel does not run here: " + checks_text(i.reasons);
    default: return out + "whether that wheel runs here cannot be told: " + checks_text(i.reasons);
  }
}

/// One node's outcome without its names.
json outcome_json(const NodePick& p, const std::string& base_url) {
  json projects = json::array();
  for (const auto& pr : p.projects) {
    json rejected = json::array();
    for (const auto& r : pr.rejected)
      rejected.push_back(
          {{"wheel", r.wheel}, {"verdict", verdict_name(r.verdict)}, {"reasons", checks_json(r.reasons)}});
    const InstallerChoice& i = pr.installer;
    json installer{{"wheel", i.wheel ? json(*i.wheel) : json(nullptr)},
                   {"plain", i.plain},
                   {"same", i.why.empty()},
                   {"why", i.why},
                   {"verdict", i.wheel ? json(verdict_name(i.verdict)) : json(nullptr)},
                   {"reasons", checks_json(i.reasons)}};
    projects.push_back({{"project", pr.project},
                        {"wheel", pr.order.empty() ? json(nullptr) : json(pr.order.front())},
                        {"pip_index_url", pr.pip_index.empty() ? json(nullptr) : json(pip_url(base_url, pr.pip_index))},
                        {"order", pr.order},
                        {"rejected", rejected},
                        {"installer", installer},
                        {"blocked_by", pr.blocked_by},
                        {"hints", pr.hints}});
  }
  return {{"ok", p.ok()},
          {"properties", static_providers_json(p.properties)},
          {"notes", p.properties.notes},
          {"projects", projects}};
}

}  // namespace

json static_providers_json(const SupportedProperties& p) {
  json providers = json::object();
  json order = json::array();
  for (const auto& ns : wheel::variant_namespaces()) {
    json statics = json::object(), features = json::array();
    for (const auto& f : p.features)
      if (f.ns == ns) {
        statics[f.feature] = f.values;
        features.push_back(f.feature);
      }
    if (statics.empty()) continue;
    json provider{{"static-properties", statics}};
    if (features.size() > 1) provider["feature-order"] = features;
    providers[ns] = provider;
    order.push_back(ns);
  }
  return {{"default-priorities", {{"namespace", order}}}, {"providers", providers}};
}

json pick_json(const std::string& index, const std::vector<NodePick>& picks, const std::string& base_url) {
  json nodes = json::array();
  bool ok = true;
  for (const auto& p : picks) {
    json j = outcome_json(p, base_url);
    json reports = json::array();
    for (const auto& r : p.reports) reports.push_back(r.string());
    j["nodes"] = p.nodes;
    j["reports"] = reports;
    nodes.push_back(j);
    ok = ok && p.ok();
  }
  return {{"index", index}, {"ok", ok}, {"nodes", nodes}};
}

std::string pick_text(const std::string& index, const std::vector<NodePick>& picks, const std::string& base_url) {
  std::size_t total = 0, served = 0;
  for (const auto& p : picks) {
    total += p.nodes.size();
    if (p.ok()) served += p.nodes.size();
  }
  std::string out = index + " for " + std::to_string(total) + (total == 1 ? " node" : " nodes") + ": " +
                    std::to_string(served) + " get a wheel" +
                    (served < total ? ", " + std::to_string(total - served) + " get none" : std::string()) + "\n";
  for (const auto& p : picks) {
    out += "\n" + strings::join(p.nodes, ", ") + "\n";
    for (const auto& pr : p.projects) {
      if (pr.order.empty()) out += "  " + pr.project + ": no wheel fits\n";
      for (std::size_t i = 0; i < pr.order.size(); ++i) {
        out += (i ? "    then     " : "  " + pr.project + ": install ") + pr.order[i] + "\n";
        if (i) continue;
        // What a plain pip is pointed at to get the pick by the project's name alone.
        if (!pr.pip_index.empty())
          out += "    pip      pip install --index-url " + pip_url(base_url, pr.pip_index) + " " + pr.project + "\n";
        if (auto line = installer_text(pr); !line.empty()) out += "    resolver " + line + "\n";
      }
      if (pr.order.empty())
        if (auto line = installer_text(pr); !line.empty()) out += "    resolver " + line + "\n";
      for (const auto& r : pr.rejected) {
        out += "    not      " + r.wheel + (r.verdict == Verdict::unknown ? " (cannot be told)" : "") + "\n";
        for (const auto& c : r.reasons) out += "               " + c.name + ": " + c.detail + "\n";
      }
    }
    for (const auto& note : p.properties.notes) out += "  note: " + note + "\n";
  }
  return out;
}

std::optional<NoWheel> no_wheel(const std::string& index, const std::vector<NodePick>& picks, Shown shown) {
  std::vector<std::string> named, hints;
  std::size_t count = 0;
  for (const auto& p : picks) {
    if (p.ok()) continue;
    std::vector<std::string> checks, fixes;
    for (const auto& pr : p.projects)
      for (std::size_t i = 0; i < pr.blocked_by.size(); ++i)
        if (std::find(checks.begin(), checks.end(), pr.blocked_by[i]) == checks.end()) {
          checks.push_back(pr.blocked_by[i]);
          fixes.push_back(pr.hints[i]);
        }
    for (const auto& n : p.nodes) named.push_back(n + (checks.empty() ? "" : " (" + strings::join(checks, ", ") + ")"));
    count += p.nodes.size();
    if (!fixes.empty()) hints.push_back(strings::join(p.nodes, ", ") + ": " + strings::join(fixes, "; "));
  }
  if (named.empty()) return std::nullopt;
  const std::string where = shown == Shown::json ? "in the JSON on stdout, nodes[].projects[].rejected" : "above";
  return NoWheel{std::to_string(count) + (count == 1 ? " node gets" : " nodes get") + " no wheel from " + index + ": " +
                     strings::join(named, ", ") + "; each wheel's reasons are " + where,
                 strings::join(hints, "\n        ")};
}

}  // namespace opforge::rollout
