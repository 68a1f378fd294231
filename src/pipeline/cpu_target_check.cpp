/// The wheel's ELF files checked against [build] cpu_target, for both backends.
#include <fnmatch.h>

#include "pipeline/stages.h"
#include "util/strings.h"
#include "wheel/isa.h"

namespace opforge::pipeline {

Status check_cpu_target(const plan::Plan& plan, const std::vector<std::pair<std::string, std::string_view>>& files,
                        const std::map<std::string, std::string>& op_of_path) {
  if (plan.recipe.build.cpu_target.empty()) return {};
  auto target = target::find_cpu_target(plan.recipe.build.cpu_target);
  if (!target) return bad_input("unknown [build] cpu_target \"" + plan.recipe.build.cpu_target + "\"");
  auto allowance = [&](const std::string& path) {
    wheel::IsaAllowance a;
    for (const auto& glob : plan.recipe.build.cpu_dispatch)
      if (::fnmatch(glob.c_str(), path.c_str(), 0) == 0) {
        a.everything = true;
        a.why = "[build] cpu_dispatch \"" + glob + "\"";
        return a;
      }
    auto op = op_of_path.find(path);
    if (op == op_of_path.end()) return a;
    for (const auto& d : plan.ops) {
      if (d.manifest.name != op->second) continue;
      std::vector<std::string> flags;
      for (const auto& [source, f] : d.manifest.source_flags) flags.insert(flags.end(), f.begin(), f.end());
      a.families = target::families_of_flags(flags);
      a.why = "op " + d.manifest.name + ": per-file ISA flags in op.toml [source_flags]";
    }
    return a;
  };
  auto checks = OPFORGE_TRY(wheel::check_cpu_target(files, *target, allowance));
  return wheel::require_cpu_target(checks, *target);
}

Status check_command_wheel(const plan::Plan& plan, std::string_view bytes, const fs::path& wheel) {
  if (plan.recipe.build.cpu_target.empty()) return {};
  auto entries = OPFORGE_TRY(wheel::read_archive(bytes));
  std::vector<std::pair<std::string, std::string_view>> files;
  for (const auto& e : entries) files.emplace_back(e.path, e.content);
  if (auto checked = check_cpu_target(plan, files, {}); !checked) {
    Error e = checked.error();
    e.hint += "; the refused wheel is " + wheel.string() + " (`opforge inspect` it)";
    return opforge::unexpected(e);
  }
  return {};
}

}  // namespace opforge::pipeline
