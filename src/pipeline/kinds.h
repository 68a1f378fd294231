#pragma once
/// One interface for every kind of build ([build] backend, recipe::kKinds): how a plan becomes
/// the commands a build runs (what `opforge plan` shows) and how those commands become the
/// outputs (the wheel and its record). The pipeline, `plan` and `verify` reach a kind only through
/// its entry here; the rest of opforge asks the kind's row what it does (recipe::project_build).
/// Adding a kind: its row in recipe/recipe.h, its folder under compile/, its entry in kinds.cpp.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "pipeline/pipeline.h"

namespace opforge::pipeline {

/// What a build of a plan will run, before it runs.
struct PlannedCommands {
  /// The variables it sets for its children beyond the caller's environment.
  std::map<std::string, std::string> environment;
  /// Each command's argv, in the order they run (or the order ninja may run them in).
  std::vector<std::vector<std::string>> argv;
  /// One line each: what the command makes (empty where the argv says it).
  std::vector<std::string> description;
  std::string where;  ///< where they run: "run by ninja in build/"
};

struct Kind {
  recipe::Backend backend;
  /// plan → commands. `tree` stands for the source tree a build copies the project into (a
  /// placeholder in `plan`'s output, since its name is the content's hash).
  Result<PlannedCommands> (*commands)(probe::Machine m, const plan::Plan& plan, const std::filesystem::path& tree);
  /// commands → outputs: runs them, then packs or normalises the wheel and writes its record.
  Result<Outcome> (*build)(probe::Machine m, Outcome outcome, const std::filesystem::path& recipe_file,
                           const std::string& recipe_text, const Options& options);
  /// What a rebuild of `r` runs, in one line (`opforge verify`'s description).
  std::string (*runs)(const recipe::Recipe& r);
};

/// The entry of `b` (every kKinds row has one: tests/pipeline_kinds_test.cpp).
const Kind& kind(recipe::Backend b);
/// Whether kinds.cpp has an entry for `b`.
bool has_kind(recipe::Backend b);

}  // namespace opforge::pipeline
