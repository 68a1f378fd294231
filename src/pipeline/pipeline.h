#pragma once
/// `opforge build` as a value-returning stage: plan → compile → wheel → build record.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compile/native.h"
#include "plan/plan.h"
#include "record/record.h"

namespace opforge::pipeline {

namespace fs = std::filesystem;

struct Options {
  plan::Options plan;
  std::optional<fs::path> build_dir;                     ///< overrides the recipe's
  std::optional<fs::path> dist_dir;                      ///< overrides the recipe's
  compile::Launcher launcher = compile::Launcher::none;  ///< --cache ccache (or the recipe's [build] cache)
  fs::path python_package;                               ///< folder of opforge_ops (src/python/opforge_ops)
  std::function<void(std::string_view)> on_line;
  std::string cell;  ///< the matrix cell built, for dist/SUMMARY.md ("default" when empty)
};

struct Outcome {
  plan::Plan plan;
  fs::path wheel;
  std::string wheel_sha256;
  std::vector<std::string> tags;
  std::string platform_reason;
  fs::path record_path;
  record::Record record;
  int steps_run = 0;
  std::optional<compile::CacheStats> cache;  ///< the ccache launcher's hits and misses in this build
  bool reused = false;                       ///< an identical wheel from the same inputs was already in dist/
};

/// Holds the build folder's lock for the whole build: a second build fails at once, clearly.
Result<Outcome> build_wheel(probe::Machine m, const fs::path& recipe_file, const Options& options);

/// The opforge_ops package shipped with this opforge (source tree or installed data folder).
fs::path default_python_package(const probe::FileSystem& fs);

}  // namespace opforge::pipeline
