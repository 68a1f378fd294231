/// `opforge verify WHEELHOUSE --nodes`: which wheel each installer takes on each node, and whether
/// it runs there. Every verdict is `opforge pick`'s (rollout/); this only asks which wheel plain pip
/// takes, which pick does not.
#include <algorithm>

#include "pipeline/wheelhouse.h"
#include "util/pep440.h"
#include "util/strings.h"

namespace opforge::pipeline {

namespace {

/// What pip knows of a wheel: its tags and requirements, none of its code (as pick's installer).
rollout::WheelNeeds tags_only(rollout::WheelNeeds w) {
  w.system = {};
  w.cpu_level = 0;
  w.cuda.clear();
  w.gpu_libraries.clear();
  return w;
}

/// pip from simple/: a variant wheel's file name is not one it accepts; of the plain wheels its tags
/// and requirements allow, the newest version (then the file name, as a stand-in for tag order).
std::optional<std::string> pip_takes(const std::vector<const rollout::IndexWheel*>& wheels,
                                     const rollout::NodeFacts& node) {
  const rollout::IndexWheel* best = nullptr;
  for (const auto* w : wheels) {
    if (w->variant) continue;
    const auto row = rollout::check_node(tags_only(w->needs), node);
    if (std::any_of(row.checks.begin(), row.checks.end(), [](auto& c) { return c.verdict == rollout::Verdict::fails; }))
      continue;
    if (!best) {
      best = w;
      continue;
    }
    const auto c = pep440::compare(w->version, best->version);
    if ((c && *c > 0) || (c && *c == 0 && w->filename < best->filename)) best = w;
  }
  if (!best) return std::nullopt;
  return best->filename;
}

/// The take of `wheel` by pick's verdict on it: ok when it fits, else its reasons (none: a refusal).
InstallerTake take(std::string installer, const std::optional<std::string>& wheel, const rollout::ProjectPick& p) {
  InstallerTake t{std::move(installer), wheel, rollout::Verdict::ok, {}};
  if (!wheel) return t;
  for (const auto& r : p.rejected)
    if (r.wheel == *wheel) {
      t.verdict = r.verdict;
      // The resolver's own filter is not a reason the wheel cannot run.
      for (const auto& c : r.reasons)
        if (c.name != "variant") t.reasons.push_back(c);
      if (t.reasons.empty()) t.verdict = rollout::Verdict::ok;
    }
  return t;
}

std::string takes_line(const InstallerTake& t) {
  if (!t.wheel) return t.installer == "pick" ? "refuses: no wheel fits" : "installs none";
  std::string line = *t.wheel + ": ";
  if (t.verdict == rollout::Verdict::ok) return line + "runs";
  line += t.verdict == rollout::Verdict::fails ? "does not run" : "cannot be told";
  for (const auto& c : t.reasons) line += "; " + c.name + ": " + c.detail;
  return line;
}

}  // namespace

bool NodeInstalls::ok() const {
  return std::none_of(takes.begin(), takes.end(), [](auto& t) { return t.verdict == rollout::Verdict::fails; });
}

std::vector<NodeInstalls> installs(const std::vector<rollout::IndexWheel>& wheels,
                                   const std::vector<rollout::NodeFacts>& nodes) {
  std::vector<NodeInstalls> out;
  for (const auto& node : nodes) {
    const rollout::NodePick picked = rollout::pick_for_node(wheels, node);
    for (const auto& p : picked.projects) {
      std::vector<const rollout::IndexWheel*> of_project;
      for (const auto& w : wheels)
        if (w.project == p.project) of_project.push_back(&w);
      NodeInstalls n{{node.name}, p.project, {}};
      n.takes.push_back(take("pip", pip_takes(of_project, node), p));
      n.takes.push_back(take("resolver", p.installer.wheel, p));
      n.takes.push_back(take("pick", p.order.empty() ? std::nullopt : std::optional(p.order.front()), p));
      auto same = std::find_if(out.begin(), out.end(),
                               [&](const NodeInstalls& o) { return o.project == n.project && o.takes == n.takes; });
      if (same == out.end()) out.push_back(std::move(n));
      else same->nodes.push_back(node.name);
    }
  }
  return out;
}

std::string installs_text(const std::string& index, const std::vector<NodeInstalls>& all) {
  std::size_t bad = 0;
  for (const auto& n : all)
    if (!n.ok()) bad += n.nodes.size();
  std::string out =
      index + ": what each installer takes on each node" +
      (bad ? " (" + std::to_string(bad) + (bad == 1 ? " node gets" : " nodes get") + " a wheel that does not run)"
           : "") +
      "\n";
  for (const auto& n : all) {
    out += "\n" + strings::join(n.nodes, ", ") + "\n  " + n.project + (n.ok() ? "" : ": FAILS") + "\n";
    for (const auto& t : n.takes) {
      const std::string who = t.installer == "pip"        ? "pip       "
                              : t.installer == "resolver" ? "resolver  "
                                                          : "pick      ";
      out += "    " + who + takes_line(t) + "\n";
    }
  }
  return out;
}

nlohmann::json installs_json(const std::string& index, const std::vector<NodeInstalls>& all) {
  nlohmann::json nodes = nlohmann::json::array();
  bool ok = true;
  for (const auto& n : all) {
    ok = ok && n.ok();
    nlohmann::json takes = nlohmann::json::array();
    for (const auto& t : n.takes) {
      nlohmann::json reasons = nlohmann::json::array();
      for (const auto& c : t.reasons)
        reasons.push_back({{"check", c.name}, {"verdict", rollout::verdict_name(c.verdict)}, {"detail", c.detail}});
      takes.push_back({{"installer", t.installer},
                       {"wheel", t.wheel ? nlohmann::json(*t.wheel) : nlohmann::json()},
                       {"verdict", rollout::verdict_name(t.verdict)},
                       {"reasons", reasons}});
    }
    nodes.push_back({{"nodes", n.nodes}, {"project", n.project}, {"ok", n.ok()}, {"takes", takes}});
  }
  return {{"target", index}, {"kind", "installers"}, {"ok", ok}, {"nodes", nodes}};
}

}  // namespace opforge::pipeline
