// `opforge pick`: a node's supported variant properties, the index's wheels, and for each node the
// wheels that fit, ordered as an installer with a variant resolver orders them.
#include "rollout/pick.h"

#include <algorithm>
#include <limits>
#include <map>

#include "doctor/doctor.h"
#include "doctor/render.h"
#include "util/pep440.h"
#include "util/strings.h"
#include "wheel/index.h"

namespace opforge::rollout {
namespace {

using json = nlohmann::json;

/// The compute capabilities nvcc has compiled PTX for (`nvcc --list-gpu-arch`: CUDA 12's 5.0 to
/// 9.0, CUDA 13.0's 7.5 to 12.1), newest first: the older PTX a GPU can JIT.
constexpr int kPtxArches[] = {121, 120, 110, 103, 100, 90, 89, 88, 87, 86, 80, 75, 72, 70, 62, 61, 60, 53, 52, 50};

std::string arch_value(int major, int minor, std::string_view kind) {
  return std::to_string(major) + std::to_string(minor) + "_" + std::string(kind);
}

/// sm_arch values that run on a GPU of capability major.minor, best first (see the header).
std::vector<std::string> sm_values(int major, int minor) {
  std::vector<std::string> out;
  for (int m = minor; m >= 0; --m) out.push_back(arch_value(major, m, "real"));
  const int own = major * 10 + minor;
  out.push_back(arch_value(major, minor, "virtual"));
  for (int m = minor - 1; m >= 0; --m)
    if (m == 0 || std::find(std::begin(kPtxArches), std::end(kPtxArches), major * 10 + m) != std::end(kPtxArches))
      out.push_back(arch_value(major, m, "virtual"));
  for (int a : kPtxArches)
    if (a < major * 10 && a < own) out.push_back(arch_value(a / 10, a % 10, "virtual"));
  return out;
}

/// nvidia-variant-provider's cuda_version_lower_bound values for a driver of CUDA `cuda`: X.Y down
/// to X.0, then X; then each older major's X.20 down to X.0 and X, down to 11.
std::vector<std::string> cuda_values(const Version& cuda) {
  std::vector<std::string> out;
  for (int major = cuda.major; major >= 11; --major) {
    for (int minor = major == cuda.major ? cuda.minor : 20; minor >= 0; --minor)
      out.push_back(std::to_string(major) + "." + std::to_string(minor));
    out.push_back(std::to_string(major));
  }
  return out;
}

/// The properties of `v` grouped by feature, in the order first met.
std::vector<std::pair<std::pair<std::string, std::string>, std::vector<std::string>>> by_feature(
    const wheel::Variant& v) {
  std::vector<std::pair<std::pair<std::string, std::string>, std::vector<std::string>>> out;
  for (const auto& p : v.properties) {
    auto it = std::find_if(out.begin(), out.end(), [&](auto& e) { return e.first == std::pair{p.ns, p.feature}; });
    if (it == out.end()) out.push_back({{p.ns, p.feature}, {p.value}});
    else it->second.push_back(p.value);
  }
  return out;
}

const SupportedFeature* find_feature(const SupportedProperties& p, const std::string& ns, const std::string& f) {
  for (const auto& s : p.features)
    if (s.ns == ns && s.feature == f) return &s;
  return nullptr;
}

std::string first_values(const std::vector<std::string>& values, std::size_t n = 4) {
  std::vector<std::string> head(values.begin(), values.begin() + static_cast<long>(std::min(n, values.size())));
  return strings::join(head, ", ") + (values.size() > n ? ", …" : "");
}

/// The resolver's filter: each feature the variant names has a value the node supports.
Check variant_check(const IndexWheel& w, const SupportedProperties& p) {
  Check c{"variant", Verdict::ok, ""};
  if (!w.variant) return c.detail = "the plain wheel (the null variant: every installer's fallback)", c;
  std::vector<std::string> fails, oks;
  for (const auto& [key, values] : by_feature(*w.variant)) {
    const std::string name = key.first + " :: " + key.second;
    const SupportedFeature* f = find_feature(p, key.first, key.second);
    if (!f) {
      fails.push_back("its " + name + " (" + strings::join(values, ", ") + "): the node supports none");
      continue;
    }
    auto best = f->values.end();
    for (const auto& v : values) best = std::min(best, std::find(f->values.begin(), f->values.end(), v));
    if (best == f->values.end())
      fails.push_back("its " + name + " (" + strings::join(values, ", ") + ") is none of the node's (" +
                      first_values(f->values) + ")");
    else oks.push_back(name + " :: " + *best);
  }
  if (!fails.empty()) return c.verdict = Verdict::fails, c.detail = strings::join(fails, "; "), c;
  return c.detail = "variant " + w.variant->label + ": " + strings::join(oks, ", "), c;
}

/// variantlib's rank of a variant: per supported feature in priority order, the index of its best
/// value among the node's; a feature it does not name, and every feature of the plain wheel, last.
std::vector<std::size_t> rank(const IndexWheel& w, const SupportedProperties& p) {
  std::vector<std::size_t> out;
  for (const auto& f : p.features) {
    std::size_t r = std::numeric_limits<std::size_t>::max();
    if (w.variant)
      for (const auto& prop : w.variant->properties)
        if (prop.ns == f.ns && prop.feature == f.feature)
          if (auto it = std::find(f.values.begin(), f.values.end(), prop.value); it != f.values.end())
            r = std::min(r, static_cast<std::size_t>(it - f.values.begin()));
    out.push_back(r);
  }
  return out;
}

/// True when `a` is installed before `b`: the newer version, then the better variant, then by label.
bool before(const IndexWheel& a, const IndexWheel& b, const SupportedProperties& p) {
  if (a.version != b.version) {
    auto c = pep440::compare(a.version, b.version);
    if (c && *c != 0) return *c > 0;
    if (!c) return a.version > b.version;
  }
  const auto ra = rank(a, p), rb = rank(b, p);
  if (ra != rb) return ra < rb;
  const std::string la = a.variant ? a.variant->label : "null", lb = b.variant ? b.variant->label : "null";
  if (la != lb) return la < lb;
  return a.filename < b.filename;
}

json check_json(const Check& c) {
  return {{"check", c.name}, {"verdict", verdict_name(c.verdict)}, {"detail", c.detail}};
}

/// The URL of an index `relative` to the folder served at `base` (none: the relative path).
std::string pip_url(const std::string& base, const std::string& relative) {
  if (base.empty()) return relative;
  return (base.ends_with("/") ? base : base + "/") + relative;
}

/// One node's outcome without its names: what decides whether two nodes are shown as one.
json outcome_json(const NodePick& p) {
  json projects = json::array();
  for (const auto& pr : p.projects) {
    json rejected = json::array();
    for (const auto& r : pr.rejected) {
      json reasons = json::array();
      for (const auto& c : r.reasons) reasons.push_back(check_json(c));
      rejected.push_back({{"wheel", r.wheel}, {"verdict", verdict_name(r.verdict)}, {"reasons", reasons}});
    }
    projects.push_back({{"project", pr.project},
                        {"wheel", pr.order.empty() ? json(nullptr) : json(pr.order.front())},
                        {"pip_index_url", pr.pip_index.empty() ? json(nullptr) : json(pr.pip_index)},
                        {"order", pr.order},
                        {"rejected", rejected}});
  }
  return {{"ok", p.ok()},
          {"properties", static_providers_json(p.properties)},
          {"notes", p.properties.notes},
          {"projects", projects}};
}

}  // namespace

SupportedProperties supported_properties(const NodeFacts& n) {
  SupportedProperties out;
  // nvidia: nothing without a driver whose CUDA is known (the plugin answers nothing there either).
  const auto cuda = node_driver_cuda(n);
  if (cuda) {
    out.features.push_back({"nvidia", "cuda_version_lower_bound", cuda_values(*cuda)});
  } else {
    out.notes.push_back("nvidia :: cuda_version_lower_bound: " +
                        (n.driver && n.driver->empty()
                             ? std::string("no NVIDIA driver on the node")
                             : "which CUDA the driver supports is not known (" +
                                   (n.unknown_why.contains("driver") ? n.unknown_why.at("driver")
                                                                     : "driver " + n.driver.value_or("?")) +
                                   ")"));
  }
  if (cuda && n.gpus && !n.gpus->empty()) {
    // The newest GPU's values first (the plugin asks only the newest), then what the others add:
    // a variant names several architectures and is supported when one of them is, so an
    // intersection would refuse an sm_80 + sm_90 wheel on a node with both GPUs. That a wheel runs
    // on every GPU is the gpu check's to say.
    auto gpus = *n.gpus;
    std::sort(gpus.begin(), gpus.end(), [](auto& a, auto& b) {
      return std::pair{a.major, a.minor} > std::pair{b.major, b.minor};
    });
    std::vector<std::string> values;
    for (const auto& g : gpus)
      for (auto& v : sm_values(g.major, g.minor))
        if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(std::move(v));
    out.features.push_back({"nvidia", "sm_arch", values});
  } else if (cuda) {
    out.notes.push_back(
        "nvidia :: sm_arch: " +
        (n.gpus ? "the report lists no GPU" + (n.gpu_reader.empty() ? std::string() : " (" + n.gpu_reader + ")")
                : (n.unknown_why.contains("gpus") ? n.unknown_why.at("gpus")
                                                  : std::string("the report does not say its GPUs"))));
  }
  if (n.torch && !n.torch->empty()) {
    if (auto r = pep440::release_of(*n.torch); r && !r->empty()) {
      const int major = (*r)[0], minor = r->size() > 1 ? (*r)[1] : 0, micro = r->size() > 2 ? (*r)[2] : 0;
      out.features.push_back({"abi_dependency",
                              "torch",
                              {std::to_string(major), std::to_string(major) + "." + std::to_string(minor),
                               std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(micro)}});
    } else {
      out.notes.push_back("abi_dependency :: torch: torch " + *n.torch + " is not a version");
    }
  } else {
    out.notes.push_back("abi_dependency :: torch: " +
                        (n.torch ? std::string("no torch on the node")
                                 : (n.unknown_why.contains("torch") ? n.unknown_why.at("torch")
                                                                    : std::string("the report does not say"))));
  }
  return out;
}

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

Result<std::vector<IndexWheel>> read_index(const probe::FileSystem& fs, const fs::path& index) {
  fs::path dist = index.lexically_normal();
  if (dist.filename().empty()) dist = dist.parent_path();
  if (dist.filename() == "simple") dist = dist.parent_path();
  if (dist.empty()) dist = ".";
  const std::string hint = "give the dist/ folder that `opforge build` or `opforge index` wrote (or its simple/)";
  if (fs.resolved_type(dist) != probe::FileType::directory) return bad_input(index.string() + ": not a folder", hint);
  auto names = OPFORGE_TRY(fs.list_directory(dist));
  std::vector<IndexWheel> out;
  std::map<std::string, std::vector<wheel::Variant>> files;  // variants.json name → its variants
  for (const auto& name : names) {
    if (name.starts_with(".") || !strings::to_lower(name).ends_with(".whl")) continue;
    auto parsed = wheel::parse_wheel_filename(name);
    if (!parsed) return bad_input((dist / name).string() + ": not a wheel's file name", hint);
    auto needs = read_wheel_needs(fs, dist / name);
    if (!needs) {
      Error e = needs.error();
      if (e.message.find(name) == std::string::npos) e.message = (dist / name).string() + ": " + e.message;
      return opforge::unexpected(e);
    }
    IndexWheel w{name, wheel::project_name(parsed->name), parsed->version, std::nullopt, std::move(*needs)};
    const std::string pip_index = parsed->variant.empty() ? "simple" : wheel::variant_index_path(parsed->variant);
    // (A label "." or ".." has no index of its own: wheel/index.cpp writes none for it.)
    if (!parsed->variant.starts_with(".") &&
        fs.type_of(dist / pip_index / w.project / "index.html") == probe::FileType::regular)
      w.pip_index = pip_index;
    if (!parsed->variant.empty()) {
      const std::string file = parsed->name + "-" + parsed->version + std::string(wheel::kVariantsIndexSuffix);
      if (!files.contains(file)) {
        auto text = fs.read_file(dist / file);
        if (!text)
          return bad_input(
              (dist / file).string() + ": " + text.error().message + " (the variant wheel " + name + " needs it)",
              "`opforge index` writes it from the variant wheels");
        auto variants = wheel::parse_variants(*text);
        if (!variants)
          return bad_input((dist / file).string() + ": " + variants.error().message, "`opforge index` rewrites it");
        files[file] = *variants;
      }
      for (const auto& v : files[file])
        if (v.label == parsed->variant) w.variant = v;
      if (!w.variant)
        return bad_input(name + ": " + file + " does not list its variant '" + parsed->variant + "'",
                         "`opforge verify " + dist.string() + "` says where the index and its wheels disagree");
      // A variant wheel has no build record of its own; its lower bound is the toolkit that
      // compiled it (wheel/variant.h), what the driver check needs when the wheel's files do not say.
      for (const auto& p : w.variant->properties)
        if (w.needs.cuda.empty() && p.ns == "nvidia" && p.feature == "cuda_version_lower_bound") {
          w.needs.cuda = p.value;
          w.needs.cuda_source = "its variant's " + p.str() + " (the toolkit that compiled it)";
        }
    }
    out.push_back(std::move(w));
  }
  if (out.empty()) return bad_input(dist.string() + ": holds no wheel", hint);
  return out;
}

bool NodePick::ok() const {
  return std::all_of(projects.begin(), projects.end(), [](auto& p) { return !p.order.empty(); });
}

NodePick pick_for_node(const std::vector<IndexWheel>& wheels, const NodeFacts& node) {
  NodePick out{{node.name}, {node.report}, supported_properties(node), {}};
  std::map<std::string, std::vector<const IndexWheel*>> fits;
  std::map<std::string, ProjectPick> projects;
  std::vector<const IndexWheel*> sorted;
  for (const auto& w : wheels) sorted.push_back(&w);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->filename < b->filename; });
  for (const IndexWheel* w : sorted) {
    ProjectPick& p = projects[w->project];
    p.project = w->project;
    NodeRow row = check_node(w->needs, node);
    row.checks.push_back(variant_check(*w, out.properties));
    Rejected r{w->filename, Verdict::ok, {}};
    for (const auto& c : row.checks) {
      if (c.verdict == Verdict::ok) continue;
      r.reasons.push_back(c);
      if (c.verdict == Verdict::fails) r.verdict = Verdict::fails;
      else if (r.verdict == Verdict::ok) r.verdict = Verdict::unknown;
    }
    if (r.verdict == Verdict::ok) fits[w->project].push_back(w);
    else p.rejected.push_back(std::move(r));
  }
  for (auto& [name, p] : projects) {
    auto& list = fits[name];
    std::sort(list.begin(), list.end(),
              [&](const IndexWheel* a, const IndexWheel* b) { return before(*a, *b, out.properties); });
    for (const IndexWheel* w : list) p.order.push_back(w->filename);
    if (!list.empty()) p.pip_index = list.front()->pip_index;
    out.projects.push_back(std::move(p));
  }
  return out;
}

std::vector<NodePick> pick(const std::vector<IndexWheel>& wheels, const std::vector<NodeFacts>& nodes) {
  std::vector<NodePick> out;
  std::vector<std::string> keys;
  for (const auto& n : nodes) {
    NodePick p = pick_for_node(wheels, n);
    const std::string key = outcome_json(p).dump();
    auto at = std::find(keys.begin(), keys.end(), key);
    if (at == keys.end()) {
      keys.push_back(key);
      out.push_back(std::move(p));
    } else {
      NodePick& same = out[static_cast<std::size_t>(at - keys.begin())];
      same.nodes.push_back(n.name);
      same.reports.push_back(n.report);
    }
  }
  return out;
}

NodeFacts this_node(probe::Machine m, const std::string& python) {
  const auto report = doctor::to_json(doctor::examine(m, python, {}));
  auto facts = parse_node_facts("(this node)", report.dump());
  facts.report = "(this node)";
  return facts;
}

json pick_json(const std::string& index, const std::vector<NodePick>& picks, const std::string& base_url) {
  json nodes = json::array();
  bool ok = true;
  for (const auto& p : picks) {
    json j = outcome_json(p);
    for (auto& project : j["projects"])
      if (project["pip_index_url"].is_string())
        project["pip_index_url"] = pip_url(base_url, project["pip_index_url"].get<std::string>());
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
        // What a plain pip is pointed at to get the pick by the project's name alone.
        if (i == 0 && !pr.pip_index.empty())
          out += "    pip      pip install --index-url " + pip_url(base_url, pr.pip_index) + " " + pr.project + "\n";
      }
      for (const auto& r : pr.rejected) {
        out += "    not      " + r.wheel + (r.verdict == Verdict::unknown ? " (cannot be told)" : "") + "\n";
        for (const auto& c : r.reasons) out += "               " + c.name + ": " + c.detail + "\n";
      }
    }
    for (const auto& note : p.properties.notes) out += "  note: " + note + "\n";
  }
  return out;
}

}  // namespace opforge::rollout
