/// Each kind of build's entry (pipeline/kinds.h): its commands for `plan`, its build, its line for
/// `verify`.
#include "pipeline/kinds.h"

#include "compile/wrap/environment.h"
#include "pipeline/stages.h"
#include "util/strings.h"

namespace opforge::pipeline {

// Each kind's build, in a file of its own beside this one (its pipeline half: what makes the
// result a wheel), declared only here, where its entry names it.

/// native_build.cpp: the ops compiled by ninja; the wheel is the pure-Python package, the op
/// libraries and build_info.py.
Result<Outcome> build_native(probe::Machine m, Outcome outcome, const std::filesystem::path& recipe_file,
                             const std::string& recipe_text, const Options& options);

/// command_build.cpp: a setup.py-style project builds its own wheel; opforge sets the
/// environment, then normalises the wheel (into the build folder) and commits it with its record.
Result<Outcome> build_with_command(probe::Machine m, Outcome outcome, const std::filesystem::path& recipe_file,
                                   const std::string& recipe_text, const Options& options);

namespace {

namespace fs = std::filesystem;

/// native: ninja over the graph of the ops' compiles and links (compile/native/).
Result<PlannedCommands> native_commands(probe::Machine, const plan::Plan& plan, const fs::path&) {
  PlannedCommands out;
  out.environment = plan.exports;
  out.where = "run by ninja in " + plan.build_dir.string();
  auto graph = OPFORGE_TRY(compile::describe(plan));
  for (auto& step : graph.steps) {
    out.argv.push_back(step.argv);
    out.description.push_back(step.description);
  }
  return out;
}

std::string native_runs(const recipe::Recipe&) {
  return "ninja and the compilers on the ops' sources in that source tree";
}

/// command: the project's own command in a scratch copy of its tree (compile/command/), with the
/// environment compile/wrap/ builds.
Result<PlannedCommands> command_commands(probe::Machine m, const plan::Plan& plan, const fs::path& tree) {
  PlannedCommands out;
  out.environment = compile::planned_exports(m, plan, tree);
  out.argv.push_back(plan.recipe.build.command);
  out.description.push_back("wheel: " + plan.recipe.build.wheel_glob);
  out.where = "run in a fresh copy of the source tree, " + tree.string();
  return out;
}

std::string command_runs(const recipe::Recipe& r) { return strings::shell_join(r.build.command) + "  (build.command)"; }

constexpr Kind kImplemented[] = {
    {recipe::Backend::native, native_commands, build_native, native_runs},
    {recipe::Backend::command, command_commands, build_with_command, command_runs},
};

}  // namespace

bool has_kind(recipe::Backend b) {
  for (const auto& k : kImplemented)
    if (k.backend == b) return true;
  return false;
}

const Kind& kind(recipe::Backend b) {
  for (const auto& k : kImplemented)
    if (k.backend == b) return k;
  return kImplemented[0];
}

}  // namespace opforge::pipeline
