// Each check of a wheel against one node, and the facts they rest on (docs/reference.md: NVIDIA's
// driver floors and PTX ISA versions; the manylinux and x86-64 rules as pip and the psABI state them).
#include <algorithm>
#include <set>
#include <tuple>

#include "rollout/rollout.h"
#include "target/platform.h"
#include "target/x86.h"
#include "util/pep440.h"
#include "util/strings.h"

namespace opforge::rollout {
namespace {

/// Why the report does not say `field` (`fallback` when the reader gave no reason).
std::string why_of(const NodeFacts& n, const std::string& field, const std::string& fallback = {}) {
  auto it = n.unknown_why.find(field);
  if (it != n.unknown_why.end()) return it->second;
  return fallback.empty() ? "the report does not say (" + field + ")" : fallback;
}

std::string mm(std::pair<int, int> v) { return std::to_string(v.first) + "." + std::to_string(v.second); }

/// "3.4.30" ≤ "3.4.32", part by part as numbers.
bool dotted_le(const std::string& a, const std::string& b) { return pep440::satisfies(a, "<=" + b).value_or(false); }

Check python_check(const WheelNeeds& w, const NodeFacts& n) {
  Check c{"python", Verdict::ok, ""};
  if (w.python_tags.empty()) return c.detail = "the file name has no Python tag", c.verdict = Verdict::unknown, c;
  for (const auto& t : w.python_tags)
    if (t == "py3") return c.detail = "pure Python tag " + t, c;
  if (!n.python) {
    c.verdict = Verdict::unknown;
    c.detail = why_of(n, "python", "the report does not say which Python");
    return c;
  }
  const bool abi3 = std::find(w.abi_tags.begin(), w.abi_tags.end(), "abi3") != w.abi_tags.end();
  const std::string have = "Python " + mm(*n.python);
  for (const auto& t : w.python_tags) {
    if (!t.starts_with("cp3")) continue;
    const auto minor = std::atoi(t.c_str() + 3);
    if (n.python->first == 3 && (abi3 ? n.python->second >= minor : n.python->second == minor))
      return c.detail = have + " (" + t + (abi3 ? "-abi3" : "") + ")", c;
  }
  c.verdict = Verdict::fails;
  c.detail =
      have + ", the wheel is for " + strings::join(w.python_tags, ".") + (abi3 ? "-abi3 (that or newer)" : " only");
  return c;
}

/// manylinux_2_X / manylinux2014 / manylinux2010 / manylinux1 → X; linux → 0; nullopt: not Linux.
std::optional<int> manylinux_floor(std::string_view tag) {
  if (tag.starts_with("manylinux_2_")) {
    tag.remove_prefix(12);
    return std::atoi(std::string(tag.substr(0, tag.find('_'))).c_str());
  }
  if (tag.starts_with("manylinux2014_")) return 17;
  if (tag.starts_with("manylinux2010_")) return 12;
  if (tag.starts_with("manylinux1_")) return 5;
  if (tag.starts_with("linux_")) return 0;
  return std::nullopt;
}

/// The machine part of a Linux platform tag: "manylinux_2_34_x86_64", "manylinux2014_x86_64" and
/// "linux_x86_64" → "x86_64".
std::string tag_machine(std::string_view tag) {
  std::size_t at = tag.find('_');
  if (tag.starts_with("manylinux_")) at = tag.find('_', tag.find('_', at + 1) + 1);
  return at == std::string_view::npos ? std::string() : std::string(tag.substr(at + 1));
}

/// A machine as `uname -m` spells it ("amd64" → "x86_64"); another text as it is.
std::string machine_name(std::string_view machine) {
  const auto* p = target::find_platform(machine);
  return p ? std::string(p->name) : std::string(machine);
}

/// The machines the wheel's Linux platform tags are for, each once, in tag order; empty when it
/// has none (a pure wheel, or only other systems' tags).
std::vector<std::string> wheel_machines(const WheelNeeds& w) {
  std::vector<std::string> out;
  for (const auto& tag : w.platforms) {
    if (!manylinux_floor(tag)) continue;
    const std::string m = machine_name(tag_machine(tag));
    if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  }
  return out;
}

Check machine_check(const WheelNeeds& w, const NodeFacts& n) {
  Check c{"machine", Verdict::ok, ""};
  const auto machines = wheel_machines(w);
  if (machines.empty()) return c.detail = "any machine (no Linux machine in its platform tags)", c;
  if (!n.machine)
    return c.verdict = Verdict::unknown, c.detail = why_of(n, "machine", "the report does not say the machine"), c;
  const std::string node = machine_name(*n.machine);
  if (std::find(machines.begin(), machines.end(), node) != machines.end()) return c.detail = node, c;
  c.verdict = Verdict::fails;
  c.detail = "wheel is for " + strings::join(machines, ", ") + ", node is " + node;
  return c;
}

Check platform_check(const WheelNeeds& w, const NodeFacts& n) {
  Check c{"platform", Verdict::ok, ""};
  if (w.platforms.empty() || (w.platforms.size() == 1 && w.platforms[0] == "any")) return c.detail = "any platform", c;
  // pip takes the wheel when one of its tags fits: glibc ≥ a manylinux floor. The machine is its
  // own row; here the tags for the node's machine count, or every Linux tag when none is (the
  // machine row fails then) or the machine is not known.
  const auto machines = wheel_machines(w);
  const std::optional<std::string> node_machine =
      n.machine && std::find(machines.begin(), machines.end(), machine_name(*n.machine)) != machines.end()
          ? std::optional(machine_name(*n.machine))
          : std::nullopt;
  std::vector<std::string> problems;
  std::string fitting;  // the first tag that fits
  for (const auto& tag : w.platforms) {
    auto floor = manylinux_floor(tag);
    if (!floor) continue;
    if (node_machine && machine_name(tag_machine(tag)) != *node_machine) continue;
    if (*floor > 0) {
      if (!n.glibc_minor)
        return c.verdict = Verdict::unknown, c.detail = why_of(n, "glibc", "the report does not say the glibc"), c;
      if (*n.glibc_minor < *floor) {
        problems.push_back(tag + " needs glibc 2." + std::to_string(*floor) + ", the node has 2." +
                           std::to_string(*n.glibc_minor));
        continue;
      }
    }
    if (fitting.empty()) fitting = tag;
  }
  if (fitting.empty()) {
    c.verdict = Verdict::fails;
    c.detail = problems.empty() ? "no Linux platform tag (" + strings::join(w.platforms, ".") + ")"
                                : strings::join(problems, "; ");
    return c;
  }
  // What the libraries use, which a linux_x86_64 tag does not state.
  std::vector<std::string> have;
  if (w.system.glibc_minor) {
    if (!n.glibc_minor)
      return c.verdict = Verdict::unknown, c.detail = why_of(n, "glibc", "the report does not say the glibc"), c;
    if (*n.glibc_minor < w.system.glibc_minor)
      problems.push_back("its libraries use GLIBC_2." + std::to_string(w.system.glibc_minor) + ", the node has 2." +
                         std::to_string(*n.glibc_minor));
    have.push_back("glibc 2." + std::to_string(*n.glibc_minor));
  }
  for (auto [name, need, node_has] :
       {std::tuple{"GLIBCXX", w.system.glibcxx, n.glibcxx}, std::tuple{"CXXABI", w.system.cxxabi, n.cxxabi}}) {
    if (need.empty()) continue;
    if (!node_has)
      return c.verdict = Verdict::unknown,
             c.detail = why_of(n, name == std::string("GLIBCXX") ? "glibcxx" : "cxxabi",
                               "the report does not say its libstdc++"),
             c;
    if (node_has->empty())
      problems.push_back(std::string("its libraries use ") + name + "_" + need + ", the node has no libstdc++");
    else if (!dotted_le(need, *node_has))
      problems.push_back(std::string("its libraries use ") + name + "_" + need + ", the node's libstdc++ has " + name +
                         "_" + *node_has);
    else if (name == std::string("GLIBCXX")) have.push_back("libstdc++ " + std::string(name) + "_" + *node_has);
  }
  if (!problems.empty()) return c.verdict = Verdict::fails, c.detail = strings::join(problems, "; "), c;
  // The machine is the machine row's; this one says the runtimes (or the tag that fits).
  c.detail = have.empty() ? fitting : strings::join(have, ", ");
  return c;
}

Check cpu_check(const WheelNeeds& w, const NodeFacts& n) {
  Check c{"cpu", Verdict::ok, ""};
  if (w.cpu_level <= 1) return c.detail = w.cpu_level ? "x86-64 baseline code" : "no x86-64 code", c;
  const std::string need = target::level_name(w.cpu_level);
  if (!n.cpu_level) {
    c.verdict = Verdict::unknown;
    c.detail = "the code needs " + need + "; " + why_of(n, "cpu_level", "the report does not say the CPU level");
    return c;
  }
  const std::string have = target::level_name(*n.cpu_level);
  if (*n.cpu_level < w.cpu_level)
    return c.verdict = Verdict::fails,
           c.detail = "the code needs " + need + ", the CPU is " + have + " (SIGILL at the first such instruction)", c;
  return c.detail = need + " code on an " + have + " CPU", c;
}

Check torch_check(const WheelNeeds& w, const NodeFacts& n) {
  Check c{"torch", Verdict::ok, ""};
  if (w.torch.empty()) return c.detail = "no torch requirement", c;
  if (!n.torch) return c.verdict = Verdict::unknown, c.detail = why_of(n, "torch"), c;
  if (n.torch->empty()) return c.detail = "no torch on the node: pip installs torch" + w.torch + " with the wheel", c;
  auto fits = pep440::satisfies(*n.torch, w.torch);
  if (!fits)
    return c.verdict = Verdict::unknown, c.detail = "cannot compare torch " + *n.torch + " with torch" + w.torch, c;
  if (!*fits)
    return c.verdict = Verdict::fails,
           c.detail = "the wheel requires torch" + w.torch + ", the node has " + *n.torch +
                      " (pip refuses it; forced in, `undefined symbol` at import)",
           c;
  return c.detail = "torch " + *n.torch + " satisfies torch" + w.torch, c;
}

/// Can `img` run on a GPU of capability major.minor? SASS: the same major at an equal or higher
/// minor; arch-specific ('a') code only on exactly its GPU; family ('f') code on its major from
/// its minor up. PTX: JIT-compiled for any GPU at least as new ('a': only its own).
bool runs_on(const wheel::FatbinImage& img, int major, int minor) {
  const int im = img.arch / 10, in = img.arch % 10;
  if (img.suffix == 'a') return im == major && in == minor;
  if (img.kind == wheel::FatbinImage::Kind::elf) return im == major && in <= minor;
  if (img.kind == wheel::FatbinImage::Kind::ptx)
    return img.suffix == 'f' ? im == major && in <= minor : img.arch <= major * 10 + minor;
  return false;
}

Check gpu_check(const WheelNeeds& w, const NodeFacts& n) {
  Check c{"gpu", Verdict::ok, ""};
  if (w.gpu_libraries.empty()) return c.detail = "no GPU code", c;
  if (!n.gpus) return c.verdict = Verdict::unknown, c.detail = why_of(n, "gpus"), c;
  if (n.gpus->empty()) return c.verdict = Verdict::unknown, c.detail = no_gpu_detail(n), c;
  std::vector<std::string> fails, unknowns, oks;
  for (const auto& gpu : *n.gpus) {
    const std::string who = "GPU " + std::to_string(gpu.index) + " (" + strings::cut(gpu.name, 60) + ", " +
                            std::to_string(gpu.major) + "." + std::to_string(gpu.minor) + ")";
    std::set<std::string> used;
    for (const auto& lib : w.gpu_libraries) {
      const wheel::FatbinImage* sass = nullptr;
      const wheel::FatbinImage* ptx = nullptr;
      for (const auto& img : lib.images) {
        if (!runs_on(img, gpu.major, gpu.minor)) continue;
        if (img.kind == wheel::FatbinImage::Kind::elf) sass = &img;
        else if (!ptx || img.arch > ptx->arch) ptx = &img;
      }
      if (sass) {
        used.insert(sass->name());
        continue;
      }
      std::set<std::string> held;
      for (const auto& img : lib.images) held.insert(img.name());
      if (!ptx) {
        fails.push_back(who + ": " + lib.path + " holds no code it can run (" +
                        strings::join(std::vector(held.begin(), held.end()), ", ") + ")");
        continue;
      }
      // PTX only: the driver JIT-compiles it, and only PTX no newer than it knows.
      auto needs = cuda_of_ptx_isa(ptx->ptx_isa.first, ptx->ptx_isa.second);
      auto has = node_driver_cuda(n);
      const std::string jit =
          who + ": " + lib.path + " has only " + ptx->name() + " PTX (ISA " + mm(ptx->ptx_isa) + ")";
      if (!needs) unknowns.push_back(jit + ", which opforge cannot date");
      else if (!has) unknowns.push_back(jit + ", and the report does not say which CUDA its driver supports");
      else if (*has < *needs)
        fails.push_back(jit + " from CUDA " + needs->str() + ": the driver (CUDA " + has->str() + ") cannot JIT it");
      else used.insert(ptx->name() + " (JIT)");
    }
    if (!used.empty()) oks.push_back(who + ": " + strings::join(std::vector(used.begin(), used.end()), ", "));
  }
  if (!fails.empty()) return c.verdict = Verdict::fails, c.detail = strings::join(fails, "; "), c;
  if (!unknowns.empty()) return c.verdict = Verdict::unknown, c.detail = strings::join(unknowns, "; "), c;
  return c.detail = strings::join(oks, "; "), c;
}

Check driver_check(const WheelNeeds& w, const NodeFacts& n) {
  // One wording whatever told the wheel's CUDA (record, library, PTX, variant): the requirement
  // is the CUDA's driver floor, not its evidence.
  Check c{"driver", Verdict::ok, ""};
  if (w.gpu_libraries.empty() && w.cuda.empty()) return c.detail = "no CUDA code", c;
  if (w.cuda.empty())
    return c.verdict = Verdict::unknown,
           c.detail =
               "which CUDA compiled the wheel is not known: no build record beside it, no CUDA library needed, no PTX",
           c;
  const auto built = parse_version(w.cuda);
  const auto floor = built ? driver_floor(built->major) : std::nullopt;
  if (!n.driver) {
    // No version, but the CUDA the driver supports: a driver for CUDA 13.x is at least 13's floor.
    if (!n.driver_cuda || !built) return c.verdict = Verdict::unknown, c.detail = why_of(n, "driver"), c;
    if (n.driver_cuda->major < built->major)
      return c.verdict = Verdict::fails,
             c.detail = "the driver, for CUDA " + n.driver_cuda->str() + ", is older than " +
                        (floor ? *floor + ", the least" : std::string("the driver")) + " CUDA " + w.cuda + " needs",
             c;
    return c.detail = "the driver supports CUDA " + n.driver_cuda->str() + ", enough for CUDA " + w.cuda +
                      "; its version was not read",
           c;
  }
  const auto floor_version = floor ? parse_version(*floor) : std::nullopt;
  if (n.driver->empty())
    return c.verdict = Verdict::fails,
           c.detail = "no NVIDIA driver on the node; CUDA " + w.cuda + " code needs " +
                      (floor ? *floor + " or newer" : std::string("one")),
           c;
  if (!floor_version) return c.verdict = Verdict::unknown, c.detail = "no known driver floor for CUDA " + w.cuda, c;
  auto have = parse_version(*n.driver);
  if (!have) return c.verdict = Verdict::unknown, c.detail = "driver version \"" + *n.driver + "\" cannot be read", c;
  if (*have < *floor_version)
    return c.verdict = Verdict::fails,
           c.detail = "driver " + *n.driver + " is older than " + *floor + ", the least CUDA " + w.cuda + " needs", c;
  c.detail = "driver " + *n.driver + " ≥ " + *floor + " for CUDA " + w.cuda;
  if (auto cuda = node_driver_cuda(n); cuda && built && *cuda < *built)
    c.detail +=
        "; it supports CUDA " + cuda->str() + ": the wheel runs by minor-version compatibility, PTX it cannot JIT";
  return c;
}

}  // namespace

std::string no_gpu_detail(const NodeFacts& n) {
  std::string_view reader = n.gpu_reader;
  if (reader.empty()) return "the report lists no GPU";
  // doctor writes "none (why)" when it found none: the why, without a second pair of parentheses.
  if (reader.starts_with("none (") && reader.ends_with(")"))
    return "the report lists no GPU: " + std::string(reader.substr(6, reader.size() - 7));
  return "the report lists no GPU, read by " + std::string(reader);
}

std::optional<Version> node_driver_cuda(const NodeFacts& n) {
  if (n.driver_cuda) return n.driver_cuda;
  if (n.driver && !n.driver->empty())
    if (auto v = parse_version(*n.driver)) return cuda_of_driver(*v);
  return std::nullopt;
}

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::ok: return "ok";
    case Verdict::fails: return "fails";
    default: return "unknown";
  }
}

std::optional<std::string> driver_floor(int cuda_major) {
  switch (cuda_major) {
    case 11: return "450.80.02";
    case 12: return "525.60.13";
    case 13: return "580";
    default: return std::nullopt;
  }
}

std::optional<Version> cuda_of_ptx_isa(int major, int minor) {
  if (major == 7 && minor >= 0 && minor <= 8) return Version{11, minor, 0};
  if (major == 8 && minor >= 0 && minor <= 5) return Version{12, minor, 0};
  if (major == 8 && minor == 7) return Version{12, 8, 0};
  if (major == 8 && minor == 8) return Version{12, 9, 0};
  if (major == 9 && minor == 0) return Version{13, 0, 0};
  return std::nullopt;
}

std::optional<Version> cuda_of_driver(const Version& driver) {
  // Each driver branch and the CUDA version nvidia-smi reports for it.
  static constexpr std::pair<int, std::pair<int, int>> kBranches[] = {
      {580, {13, 0}}, {575, {12, 9}}, {570, {12, 8}}, {560, {12, 6}}, {555, {12, 5}}, {550, {12, 4}}, {545, {12, 3}},
      {535, {12, 2}}, {530, {12, 1}}, {525, {12, 0}}, {520, {11, 8}}, {515, {11, 7}}, {510, {11, 6}}, {495, {11, 5}},
      {470, {11, 4}}, {465, {11, 3}}, {460, {11, 2}}, {455, {11, 1}}, {450, {11, 0}}};
  if (driver.major > 580) return std::nullopt;  // a newer branch: its CUDA is not in the table
  for (const auto& [branch, cuda] : kBranches)
    if (driver.major >= branch) return Version{cuda.first, cuda.second, 0};
  return std::nullopt;
}

NodeRow check_node(const WheelNeeds& wheel, const NodeFacts& node) {
  NodeRow row{node.name, node.report, Verdict::ok, {}};
  if (!node.unreadable.empty()) {
    row.verdict = Verdict::unknown;
    row.checks.push_back({"report", Verdict::unknown, node.unreadable});
    return row;
  }
  row.checks = {gpu_check(wheel, node),      driver_check(wheel, node), machine_check(wheel, node),
                platform_check(wheel, node), cpu_check(wheel, node),    python_check(wheel, node),
                torch_check(wheel, node)};
  for (const auto& c : row.checks)
    if (c.verdict == Verdict::fails) row.verdict = Verdict::fails;
    else if (c.verdict == Verdict::unknown && row.verdict == Verdict::ok) row.verdict = Verdict::unknown;
  return row;
}

}  // namespace opforge::rollout
