#pragma once
/// `opforge verify RECORD`'s policy: what a rebuild from a build record may do. A record is
/// untrusted input that names a recipe, and a recipe names programs (a build command, a Python, a
/// host compiler) and sources to compile: the recipe and source are checked against the hashes the
/// record holds, and what a rebuild would run is described before anything runs.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "compile/watch/progress.h"
#include "probe/machine.h"
#include "record/record.h"

namespace opforge::pipeline {

/// The recipe and source a record names, checked against it, and what a rebuild runs.
struct RebuildCheck {
  std::string recipe;
  std::vector<std::string> description;  ///< one line each, shown before anything runs
  /// The root the record was built in (inputs.root), where the rebuild runs; nullopt: this machine.
  std::optional<std::filesystem::path> root;
};

/// bad_input (naming `path`, the record's file) when the record names no recipe or no recipe hash,
/// the recipe cannot be read or has changed, or a local git source is not at the recorded commit
/// (or has changes the record's clean tree did not). A record built inside a root is rebuilt
/// there (`root_override`, --root, names where that root is now): bad_input when it is gone or is
/// no longer the distribution, glibc and gcc the record names. Runs nothing but the root's
/// description.
Result<RebuildCheck> check_record(probe::Machine m, const std::string& path, const record::Record& rec,
                                  const std::optional<std::filesystem::path>& root_override = std::nullopt);

/// Rebuilds from `expected` (the record at `path`, checked by check_record) into a temporary
/// folder, with exactly the recorded variables, and compares every output's hash: the outputs
/// that differ (empty when all match). The folder is removed, except when the rebuild fails: its
/// error's hint then names it (logs may be inside). `on_line`, `on_step`: the build's progress, as
/// `opforge build` shows it.
Result<std::vector<std::string>> rebuild_and_compare(probe::Machine m, const std::string& path,
                                                     const record::Record& expected, const RebuildCheck& checked,
                                                     const std::function<void(std::string_view)>& on_line = {},
                                                     const compile::StepSink& on_step = {});

}  // namespace opforge::pipeline
