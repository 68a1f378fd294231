// `opforge pick`'s choosing, pure: a node's supported variant properties (ours and NVIDIA's
// plugin's), the wheels that fit it ordered as an installer with a variant resolver orders them,
// what such an installer takes instead, and what would make a wheel fit. Reading the index is
// pick_index.cpp's, printing pick_render.cpp's.
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "rollout/pick.h"
#include "target/x86.h"
#include "util/pep440.h"
#include "util/strings.h"

namespace opforge::rollout {
namespace {

/// The compute capabilities nvcc has compiled PTX for (`nvcc --list-gpu-arch`: CUDA 12's 5.0 to
/// 9.0, CUDA 13.0's 7.5 to 12.1), newest first: the older PTX a GPU can JIT.
constexpr int kPtxArches[] = {121, 120, 110, 103, 100, 90, 89, 88, 87, 86, 80, 75, 72, 70, 62, 61, 60, 53, 52, 50};

/// The checks in the order check_node gives them, the resolver's last: the order of `blocked_by`.
constexpr std::string_view kCheckOrder[] = {"report", "gpu",    "driver", "machine", "platform",
                                            "cpu",    "python", "torch",  "variant"};

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

/// nvidia-variant-provider 0.0.2's sm_arch values: the GPU's NN_real down to N0_real, then
/// N0_virtual; nothing below 5.0.
std::vector<std::string> plugin_sm_values(int major, int minor) {
  if (major * 10 + minor < 50) return {};
  std::vector<std::string> out;
  for (int m = minor; m >= 0; --m) out.push_back(arch_value(major, m, "real"));
  out.push_back(arch_value(major, 0, "virtual"));
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

/// The node's GPUs, newest first.
std::vector<devices::Gpu> newest_first(const NodeFacts& n) {
  auto gpus = n.gpus.value_or(std::vector<devices::Gpu>{});
  std::sort(gpus.begin(), gpus.end(), [](auto& a, auto& b) {
    return std::pair{a.major, a.minor} > std::pair{b.major, b.minor};
  });
  return gpus;
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

const SupportedFeature* find_feature(const SupportedProperties& p, std::string_view ns, std::string_view f) {
  for (const auto& s : p.features)
    if (s.ns == ns && s.feature == f) return &s;
  return nullptr;
}

std::string first_values(const std::vector<std::string>& values, std::size_t n = 4) {
  std::vector<std::string> head(values.begin(), values.begin() + static_cast<long>(std::min(n, values.size())));
  return strings::join(head, ", ") + (values.size() > n ? ", …" : "");
}

/// The features of `w`'s variant that `p` supports none of the values of: (ns :: feature, its values).
std::vector<std::pair<std::string, std::vector<std::string>>> unsupported(const IndexWheel& w,
                                                                          const SupportedProperties& p) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  if (!w.variant) return out;
  for (const auto& [key, values] : by_feature(*w.variant)) {
    const SupportedFeature* f = find_feature(p, key.first, key.second);
    const bool any = f && std::any_of(values.begin(), values.end(), [&](auto& v) {
                       return std::find(f->values.begin(), f->values.end(), v) != f->values.end();
                     });
    if (!any) out.push_back({key.first + " :: " + key.second, values});
  }
  return out;
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

/// What an installer knows of a wheel: its tags and requirements, none of its code.
WheelNeeds installer_view(WheelNeeds w) {
  w.system = {};
  w.cpu_level = 0;
  w.cuda.clear();
  w.gpu_libraries.clear();
  return w;
}

/// The checks an installer does not make (installer_view leaves them nothing to check), as what it
/// does not look at.
std::string unchecked(std::string_view check) {
  if (check == "gpu") return "the wheel's GPU code";
  if (check == "driver") return "the driver the wheel's CUDA needs";
  if (check == "cpu") return "the CPU level its code needs";
  if (check == "platform") return "the glibc and libstdc++ its libraries use";
  return {};
}

/// What the installer takes of one project's wheels (`wheels`, in file-name order), and, where it
/// is not `pick`'s first, why and whether it runs (`rejected`: pick's verdicts on the others).
InstallerChoice installer_choice(const std::vector<const IndexWheel*>& wheels, const NodeFacts& node,
                                 const SupportedProperties& plugin, const ProjectPick& pick) {
  std::vector<const IndexWheel*> takes;
  for (const IndexWheel* w : wheels) {
    const NodeRow row = check_node(installer_view(w->needs), node);
    const bool refused =
        std::any_of(row.checks.begin(), row.checks.end(), [](auto& c) { return c.verdict == Verdict::fails; });
    if (!refused && variant_check(*w, plugin).verdict == Verdict::ok) takes.push_back(w);
  }
  std::sort(takes.begin(), takes.end(),
            [&](const IndexWheel* a, const IndexWheel* b) { return before(*a, *b, plugin); });
  InstallerChoice out;
  const IndexWheel* chosen = takes.empty() ? nullptr : takes.front();
  const std::optional<std::string> picked = pick.order.empty() ? std::nullopt : std::optional(pick.order.front());
  if (chosen) {
    out.wheel = chosen->filename;
    out.plain = !chosen->variant;
    for (const auto& r : pick.rejected)
      if (r.wheel == chosen->filename) out.verdict = r.verdict, out.reasons = r.reasons;
  }
  if (out.wheel == picked) return out;
  // The pick is not among what the plugin offers: say which of its values it lacks.
  if (picked)
    for (const IndexWheel* w : wheels)
      if (w->filename == *picked)
        for (const auto& [name, values] : unsupported(*w, plugin)) {
          const auto dot = name.find(" :: ");
          const SupportedFeature* f = find_feature(plugin, name.substr(0, dot), name.substr(dot + 4));
          out.why += std::string(out.why.empty() ? "" : "; ") + "the plugin does not offer the pick's " + name + " " +
                     strings::join(values, ", ") + " here" +
                     (f ? ", only " + first_values(f->values) : std::string(", nor any other"));
        }
  if (out.why.empty()) {
    // The pick ranks after a wheel pick refuses, or there is no pick: the installer takes what it
    // does not look into.
    std::vector<std::string> blind;
    for (const auto& c : out.reasons)
      if (auto what = unchecked(c.name); !what.empty()) blind.push_back(what);
    out.why =
        blind.empty() ? "its tags and requirements allow it" : "it does not check " + strings::join(blind, " or ");
  }
  if (!chosen) out.why += "; no other wheel is left to it";
  return out;
}

/// The checks of `r` that keep it out, the resolver's filter only when nothing else does (its
/// sm_arch, CUDA and torch values mirror the gpu, driver and torch checks).
std::vector<std::string> keeping_out(const Rejected& r) {
  std::vector<std::string> out;
  for (const auto& c : r.reasons)
    if (c.name != "variant") out.push_back(c.name);
  if (out.empty())
    for (const auto& c : r.reasons) out.push_back(c.name);
  return out;
}

/// What would make one of `near` (the wheels nearest to fitting) pass `check` on `n`.
std::string hint_for(const std::string& check, const std::vector<const IndexWheel*>& near,
                     const std::vector<const Rejected*>& why, const NodeFacts& n) {
  const bool unknown = std::none_of(why.begin(), why.end(), [&](const Rejected* r) {
    return std::any_of(r->reasons.begin(), r->reasons.end(),
                       [&](auto& c) { return c.name == check && c.verdict == Verdict::fails; });
  });
  if (check == "gpu" && n.gpus && n.gpus->empty())
    return "its report lists no GPU: run `opforge doctor --json` where the driver sees its GPUs, or build a wheel "
           "without GPU code for it";
  if (unknown || check == "report")
    return "run `opforge doctor --json` there again with this opforge: its report does not tell the " + check +
           " check enough";
  if (check == "gpu")
    return "build a wheel with code for its GPUs (`opforge plan RECIPE --nodes REPORT…` gives the arch list)";
  if (check == "driver") {
    // The wheel of the oldest CUDA, named as the driver check names it.
    std::optional<Version> least;
    std::string cuda = "its CUDA";
    for (const IndexWheel* w : near)
      if (auto v = parse_version(w->needs.cuda); v && (!least || *v < *least))
        least = v, cuda = "CUDA " + w->needs.cuda;
    const auto floor = least ? driver_floor(least->major) : std::nullopt;
    const std::string floor_text = floor ? *floor + " or newer" : "one for " + cuda;
    if (n.driver && n.driver->empty()) return "install an NVIDIA driver on it, " + floor_text + " for " + cuda;
    std::string out = "update its NVIDIA driver to " + floor_text + (floor ? ", the least " + cuda + " needs" : "");
    if (auto has = node_driver_cuda(n))
      out += ", or build the wheel with CUDA " + has->str() +
             " or older, which its driver supports ([cuda] version "
             "in the recipe)";
    return out;
  }
  if (check == "machine")
    return n.machine ? "build a wheel for " + *n.machine + ": `opforge build RECIPE --platform " + *n.machine + "`"
                     : "build a wheel for its machine";
  if (check == "platform")
    return n.glibc_minor ? "build the wheel for its glibc 2." + std::to_string(*n.glibc_minor) +
                               " and libstdc++: `opforge build RECIPE --glibc 2." + std::to_string(*n.glibc_minor) +
                               "`, in a root that old (--root)"
                         : "build the wheel for its glibc and libstdc++";
  if (check == "cpu")
    return "build the wheel for its CPU: [build] cpu_target in the recipe" +
           (n.cpu_level ? " = \"" + target::level_name(*n.cpu_level) + "\"" : std::string());
  if (check == "python")
    return n.python ? "build a wheel for its Python " + std::to_string(n.python->first) + "." +
                          std::to_string(n.python->second)
                    : "build a wheel for its Python";
  if (check == "torch")
    return "build a wheel against its torch" + (n.torch && !n.torch->empty() ? " " + *n.torch : std::string()) +
           ", or install there the torch the wheels require";
  if (check == "variant")
    return "publish the plain wheel beside the variants: the fallback of a node that supports none of their "
           "properties";
  return "fix what the " + check + " check names";
}

/// Why the node gets no wheel of `p`, and what would change that (ProjectPick::blocked_by, hints).
void explain(ProjectPick& p, const std::vector<const IndexWheel*>& wheels, const NodeFacts& node) {
  if (!p.order.empty() || p.rejected.empty()) return;
  std::size_t fewest = std::numeric_limits<std::size_t>::max();
  for (const auto& r : p.rejected) fewest = std::min(fewest, keeping_out(r).size());
  std::set<std::string> blocked;
  std::map<std::string, std::pair<std::vector<const IndexWheel*>, std::vector<const Rejected*>>> by_check;
  for (const auto& r : p.rejected) {
    const auto names = keeping_out(r);
    if (names.size() != fewest) continue;
    const IndexWheel* w = *std::find_if(wheels.begin(), wheels.end(), [&](auto* x) { return x->filename == r.wheel; });
    for (const auto& name : names) {
      blocked.insert(name);
      by_check[name].first.push_back(w);
      by_check[name].second.push_back(&r);
    }
  }
  for (auto name : kCheckOrder)
    if (blocked.contains(std::string(name))) {
      p.blocked_by.push_back(std::string(name));
      const auto& [near, why] = by_check[std::string(name)];
      p.hints.push_back(hint_for(std::string(name), near, why, node));
    }
}

}  // namespace

SupportedProperties supported_properties(const NodeFacts& n) {
  SupportedProperties out;
  const std::string nvidia(wheel::kNvidia), cuda_bound(wheel::kCudaLowerBound), sm_arch(wheel::kSmArch);
  const std::string abi(wheel::kAbiDependency), torch(wheel::kTorch);
  // nvidia: nothing without a driver whose CUDA is known (the plugin answers nothing there either).
  const auto cuda = node_driver_cuda(n);
  if (cuda) {
    out.features.push_back({nvidia, cuda_bound, cuda_values(*cuda)});
  } else {
    out.notes.push_back(nvidia + " :: " + cuda_bound + ": " +
                        (n.driver && n.driver->empty()
                             ? std::string("no NVIDIA driver on the node")
                             : "which CUDA the driver supports is not known: " +
                                   (n.unknown_why.contains("driver") ? n.unknown_why.at("driver")
                                                                     : "driver " + n.driver.value_or("?"))));
  }
  if (cuda && n.gpus && !n.gpus->empty()) {
    // The newest GPU's values first (the plugin asks only the newest), then what the others add:
    // a variant names several architectures and is supported when one of them is, so an
    // intersection would refuse an sm_80 + sm_90 wheel on a node with both GPUs. That a wheel runs
    // on every GPU is the gpu check's to say.
    std::vector<std::string> values;
    for (const auto& g : newest_first(n))
      for (auto& v : sm_values(g.major, g.minor))
        if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(std::move(v));
    out.features.push_back({nvidia, sm_arch, values});
  } else if (cuda) {
    out.notes.push_back(nvidia + " :: " + sm_arch + ": " +
                        (n.gpus ? no_gpu_detail(n)
                                : (n.unknown_why.contains("gpus") ? n.unknown_why.at("gpus")
                                                                  : std::string("the report does not say its GPUs"))));
  }
  if (n.torch && !n.torch->empty()) {
    if (auto r = pep440::release_of(*n.torch); r && !r->empty()) {
      const int major = (*r)[0], minor = r->size() > 1 ? (*r)[1] : 0, micro = r->size() > 2 ? (*r)[2] : 0;
      out.features.push_back({abi,
                              torch,
                              {std::to_string(major), std::to_string(major) + "." + std::to_string(minor),
                               std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(micro)}});
    } else {
      out.notes.push_back(abi + " :: " + torch + ": torch " + *n.torch + " is not a version");
    }
  } else {
    out.notes.push_back(abi + " :: " + torch + ": " +
                        (n.torch ? std::string("no torch on the node")
                                 : (n.unknown_why.contains("torch") ? n.unknown_why.at("torch")
                                                                    : std::string("the report does not say"))));
  }
  return out;
}

SupportedProperties plugin_properties(const NodeFacts& n) {
  SupportedProperties out = supported_properties(n);
  const auto cuda = node_driver_cuda(n);
  // The plugin turns itself off for a driver's CUDA outside 11.0 to 15.20.
  const bool off = cuda && (cuda->major < 11 || cuda->major > 15);
  const auto gpus = newest_first(n);
  std::vector<SupportedFeature> kept;
  for (auto& f : out.features) {
    if (f.ns == wheel::kNvidia && off) continue;
    if (f.ns == wheel::kNvidia && f.feature == wheel::kSmArch) {
      f.values = plugin_sm_values(gpus.front().major, gpus.front().minor);
      if (f.values.empty()) continue;
    }
    kept.push_back(std::move(f));
  }
  out.features = std::move(kept);
  return out;
}

bool NodePick::ok() const {
  return std::all_of(projects.begin(), projects.end(), [](auto& p) { return !p.order.empty(); });
}

NodePick pick_for_node(const std::vector<IndexWheel>& wheels, const NodeFacts& node) {
  NodePick out{{node.name}, {node.report}, supported_properties(node), {}};
  const SupportedProperties plugin = plugin_properties(node);
  std::map<std::string, std::vector<const IndexWheel*>> of_project;  // in file-name order
  for (const auto& w : wheels) of_project[w.project].push_back(&w);
  for (auto& [name, list] : of_project) {
    std::sort(list.begin(), list.end(), [](auto* a, auto* b) { return a->filename < b->filename; });
    ProjectPick p;
    p.project = name;
    std::vector<const IndexWheel*> fits;
    for (const IndexWheel* w : list) {
      NodeRow row = check_node(w->needs, node);
      row.checks.push_back(variant_check(*w, out.properties));
      Rejected r{w->filename, Verdict::ok, {}};
      for (const auto& c : row.checks) {
        if (c.verdict == Verdict::ok) continue;
        r.reasons.push_back(c);
        if (c.verdict == Verdict::fails) r.verdict = Verdict::fails;
        else if (r.verdict == Verdict::ok) r.verdict = Verdict::unknown;
      }
      if (r.verdict == Verdict::ok) fits.push_back(w);
      else p.rejected.push_back(std::move(r));
    }
    std::sort(fits.begin(), fits.end(),
              [&](const IndexWheel* a, const IndexWheel* b) { return before(*a, *b, out.properties); });
    for (const IndexWheel* w : fits) p.order.push_back(w->filename);
    if (!fits.empty()) p.pip_index = fits.front()->pip_index;
    p.installer = installer_choice(list, node, plugin, p);
    explain(p, list, node);
    out.projects.push_back(std::move(p));
  }
  return out;
}

std::vector<NodePick> pick(const std::vector<IndexWheel>& wheels, const std::vector<NodeFacts>& nodes) {
  std::vector<NodePick> out;
  for (const auto& n : nodes) {
    NodePick p = pick_for_node(wheels, n);
    auto same = std::find_if(out.begin(), out.end(), [&](const NodePick& o) {
      return o.properties == p.properties && o.projects == p.projects;
    });
    if (same == out.end()) {
      out.push_back(std::move(p));
    } else {
      same->nodes.push_back(n.name);
      same->reports.push_back(n.report);
    }
  }
  return out;
}

}  // namespace opforge::rollout
