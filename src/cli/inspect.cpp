// `opforge inspect WHEEL [--json] [--cpu-target T]`: files, tags, what each ELF needs, the GPU
// code inside, and the x86-64 level its CPU code needs (checked against T when given).
#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "cli/command.h"
#include "probe/machine.h"
#include "util/json.h"
#include "util/strings.h"
#include "wheel/wheel.h"

namespace opforge::cli {
namespace {

nlohmann::json isa_json(const wheel::IsaUse& u) {
  nlohmann::json j{{"analysed", u.analysed}};
  if (!u.analysed) {
    j["why"] = u.why;
    return j;
  }
  j["level"] = u.level_name();
  j["summary"] = u.summary();
  j["instructions"] = u.instructions;
  j["undecodable_bytes"] = u.undecodable;
  // "families": what every CPU runs (the level); "dispatched": only behind a run-time CPU check.
  for (auto [key, list] : {std::pair{"families", &u.families}, std::pair{"dispatched", &u.dispatched}}) {
    j[key] = nlohmann::json::array();
    for (const auto& f : *list) {
      nlohmann::json fj{{"family", f.family},
                        {"level", f.level ? nlohmann::json(target::level_name(u.platform, f.level)) : nlohmann::json()},
                        {"count", f.count},
                        {"first_address", f.first_address},
                        {"first_mnemonic", f.first_mnemonic},
                        {"first_symbol", f.first_symbol}};
      if (!f.dispatch.empty()) fj["dispatch"] = f.dispatch;
      j[key].push_back(std::move(fj));
    }
  }
  return j;
}

/// The level of the most demanding analysed file, named as its machine names it ("x86-64-v3",
/// "armv8-a"); empty when no file was analysed.
std::string wheel_level(const wheel::Inspection& in) {
  const wheel::IsaUse* top = nullptr;
  for (const auto& f : in.files)
    if (f.isa && f.isa->analysed && (!top || f.isa->level > top->level)) top = &*f.isa;
  return top ? top->level_name() : std::string();
}

/// The families any file uses only behind a run-time CPU check, in its machine's table order.
std::vector<std::string> wheel_dispatched(const wheel::Inspection& in) {
  std::vector<std::string> out;
  for (const auto& f : in.files) {
    if (!f.isa) continue;
    for (const auto& t : target::isa_families(f.isa->platform))
      if (std::find(out.begin(), out.end(), t.name) == out.end() &&
          std::any_of(f.isa->dispatched.begin(), f.isa->dispatched.end(),
                      [&](const wheel::FamilyUse& u) { return u.family == t.name; }))
        out.push_back(std::string(t.name));
  }
  return out;
}

nlohmann::json to_json(const wheel::Inspection& in) {
  nlohmann::json j;
  j["wheel"] = in.filename;
  j["name"] = in.name;
  j["version"] = in.version;
  j["tags"] = in.tags;
  j["computed_python_abi"] = in.abi.python_abi;
  j["python_abi_reason"] = in.abi.reason;
  j["python_abi_conflicts"] = in.abi.conflicts;
  j["computed_platform"] = in.computed.platform;
  j["computed_platform_reasons"] = in.computed.reasons;
  j["computed_platform_provided"] = in.computed.provided;
  j["requirements"] = in.requirements;
  j["valid"] = in.report.ok();
  j["problems"] = in.report.problems;
  const std::string level = wheel_level(in);
  j["cpu_level"] = level.empty() ? nlohmann::json() : nlohmann::json(level);
  j["cpu_dispatched"] = wheel_dispatched(in);
  j["files"] = nlohmann::json::array();
  for (const auto& f : in.files) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", f.mode);
    nlohmann::json fj{{"path", f.path}, {"size", f.size}, {"mode", mode}};
    if (f.elf) {
      nlohmann::json e;
      e["needed"] = f.elf->needed;
      e["soname"] = f.elf->soname;
      e["version_needs"] = f.elf->version_needs;
      e["version_symbols"] = f.elf->version_symbols;
      const auto needs = wheel::system_needs({{f.path, *f.elf}}, in.requirements);
      e["needs"] = {{"glibc", needs.glibc_minor ? "2." + std::to_string(needs.glibc_minor) : ""},
                    {"glibcxx", needs.glibcxx},
                    {"cxxabi", needs.cxxabi},
                    {"runs_on", wheel::distributions_for(needs)}};
      e["stripped"] = !f.elf->has_symtab;
      e["fatbin"] = nlohmann::json::array();
      for (const auto& img : f.elf->fatbin)
        e["fatbin"].push_back({{"kind", img.kind == wheel::FatbinImage::Kind::ptx   ? "ptx"
                                        : img.kind == wheel::FatbinImage::Kind::elf ? "elf"
                                                                                    : "unknown"},
                               {"name", img.name()},
                               {"arch", img.arch},
                               {"compressed", img.compressed},
                               {"size", img.size}});
      if (f.isa) e["isa"] = isa_json(*f.isa);
      const auto torch = wheel::torch_linkage(*f.elf);
      e["torch"] = {{"abi", torch.abi == wheel::TorchAbi::cxx      ? "cxx"
                            : torch.abi == wheel::TorchAbi::stable ? "stable"
                                                                   : "none"},
                    {"evidence", torch.evidence}};
      fj["elf"] = std::move(e);
    }
    j["files"].push_back(std::move(fj));
  }
  return j;
}

/// "glibc 2.34, libstdc++ GLIBCXX_3.4.22 (runs on RHEL 9 (glibc 2.34), ...)".
std::string runs_on(const wheel::SystemNeeds& needs) {
  auto on = wheel::distributions_for(needs);
  return needs.str() + " (runs on " +
         (on.empty() ? std::string("none of the distributions opforge knows") : strings::join(on, ", ")) + ")";
}

std::string text(const wheel::Inspection& in) {
  std::string out;
  out += in.filename + "\n";
  out += "  name: " + in.name + "\n  version: " + in.version + "\n";
  out += "  tags: " + strings::join(in.tags, ", ") + "\n";
  if (!in.abi.python_abi.empty()) out += "  python-abi opforge computes: " + in.abi.python_abi + "\n";
  out += "    because " + in.abi.reason + "\n";
  for (const auto& c : in.abi.conflicts) out += "    disagrees: " + c + "\n";
  out += "  platform opforge computes: " + in.computed.platform + "\n";
  for (const auto& r : in.computed.reasons) out += "    because " + r + "\n";
  for (const auto& r : in.computed.provided) out += "    leaving out " + r + "\n";
  {
    std::map<std::string, wheel::ElfInfo> elfs;
    for (const auto& f : in.files)
      if (f.elf) elfs.emplace(f.path, *f.elf);
    if (!elfs.empty()) out += "  needs: " + runs_on(wheel::system_needs(elfs, in.requirements)) + "\n";
  }
  if (const std::string level = wheel_level(in); !level.empty()) {
    out += "  cpu code needs: " + level + " (the highest of its files)\n";
    if (auto d = wheel_dispatched(in); !d.empty())
      out += "  dispatched at run time: " + strings::join(d, ", ") +
             " (used only after a CPU check; a CPU without them runs the other code)\n";
  }
  out += in.report.ok() ? "  RECORD, names and paths: valid\n" : "  problems:\n";
  for (const auto& p : in.report.problems) out += "    " + p + "\n";
  out += "  files:\n";
  for (const auto& f : in.files) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", f.mode);
    out += "    " + std::string(mode) + " " + std::to_string(f.size) + " " + f.path + "\n";
    if (!f.elf) continue;
    out += "      needed: " + strings::join(f.elf->needed, " ") + "\n";
    out += "      needs: " + runs_on(wheel::system_needs({{f.path, *f.elf}}, in.requirements)) + "\n";
    for (const auto& [lib, versions] : f.elf->version_needs) {
      std::vector<std::string> interesting;
      for (const auto& v : versions)
        if (v.starts_with("GLIBC") || v.starts_with("CXXABI") || v.starts_with("GCC")) interesting.push_back(v);
      if (!interesting.empty()) out += "      " + lib + ": " + strings::join(interesting, " ") + "\n";
    }
    if (f.isa) {
      out += "      cpu: " + f.isa->summary();
      std::vector<std::string> counts;
      for (const auto& u : f.isa->families) counts.push_back(u.family + " " + std::to_string(u.count));
      if (!counts.empty()) out += " (" + strings::join(counts, ", ") + ")";
      out += "\n";
      // Where the most demanding code starts, so a user can tell a dispatched kernel from the plain path.
      for (const auto& u : f.isa->families)
        if ((u.level == f.isa->level && u.level > 1) || u.level == 0) out += "        " + wheel::describe_use(u) + "\n";
    }
    if (const auto torch = wheel::torch_linkage(*f.elf); torch.abi != wheel::TorchAbi::none)
      out += "      torch: " + std::string(wheel::torch_abi_name(torch.abi)) +
             (torch.abi == wheel::TorchAbi::cxx ? " (loads with the torch it was built against only): "
                                                : " (loads with that torch or a newer one): ") +
             strings::join(torch.evidence, ", ") + "\n";
    if (!f.elf->fatbin.empty()) {
      std::set<std::string> sass, ptx;
      for (const auto& img : f.elf->fatbin) (img.kind == wheel::FatbinImage::Kind::ptx ? ptx : sass).insert(img.name());
      out += "      gpu code: " + strings::join({sass.begin(), sass.end()}, " ");
      if (!ptx.empty()) out += "  ptx: " + strings::join({ptx.begin(), ptx.end()}, " ");
      out += "\n";
    }
  }
  return out;
}

const Registrar inspect_command{Registration{
    "inspect", "show a wheel's files, tags, ELF symbol versions and GPU architectures", [](CLI::App& app) -> Runner {
      auto wheel_path = std::make_shared<std::string>();
      auto json = std::make_shared<bool>(false);
      app.add_option("wheel", *wheel_path, "the .whl file")->required();
      app.add_flag("--json", *json, "print JSON");
      auto cpu_target = std::make_shared<std::string>();
      app.add_option("--cpu-target", *cpu_target,
                     "fail (exit 1) when a file's code needs more than this CPU (x86-64-v3, ...)");
      return [wheel_path, json, cpu_target]() -> Status {
        auto m = probe::real_machine();
        std::optional<target::CpuTarget> target;
        if (!cpu_target->empty()) {
          target = target::find_cpu_target(*cpu_target);
          if (!target)
            return bad_input("--cpu-target: unknown CPU target \"" + *cpu_target + "\"",
                             "accepted values: " + strings::join(target::cpu_target_names(), ", "));
        }
        auto in = OPFORGE_TRY(wheel::inspect(m.fs, *wheel_path));
        if (*json) std::cout << util::json_dump(to_json(in), 2) << "\n";
        else std::cout << text(in);
        if (!target) return {};
        std::vector<wheel::IsaCheck> checks;
        for (const auto& f : in.files) {
          if (f.isa && f.isa->analysed && f.isa->platform != target->platform)
            return failure(f.path + " is " + f.isa->platform + " code, and " + target->name + " is an " +
                               target->platform + " CPU: the wheel cannot run there at all",
                           "give a CPU target of " + f.isa->platform + ": " +
                               strings::join(target::cpu_target_names(f.isa->platform), ", "));
          if (f.isa) checks.push_back({f.path, *f.isa, wheel::above_target(*f.isa, *target), {}, {}});
        }
        return wheel::require_cpu_target(checks, *target);
      };
    }}};

}  // namespace
}  // namespace opforge::cli
