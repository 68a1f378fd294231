#pragma once
/// `opforge build` as a value-returning stage: plan → compile → wheel → build record.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compile/native.h"
#include "compile/op_steps.h"
#include "plan/plan.h"
#include "record/record.h"

namespace opforge::pipeline {

namespace fs = std::filesystem;

struct Options {
  plan::Options plan;
  std::optional<fs::path> build_dir;  ///< overrides the recipe's
  std::optional<fs::path> dist_dir;   ///< overrides the recipe's
  fs::path python_package;            ///< folder of opforge_ops (src/python/opforge_ops)
  std::function<void(std::string_view)> on_line;
  compile::StepSink on_step;  ///< each compile step (native) or op and command (command) as it starts and ends
  std::string cell;           ///< the matrix cell built, for dist/SUMMARY.md ("default" when empty)
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
  std::optional<compile::CacheStats> cache;  ///< with ccache (plan.cache): its hits and misses in this build
  bool reused = false;                       ///< an identical wheel from the same inputs was already in dist/
  /// Command builds of a DeepSpeed tree: each op's compile step (plan.ops then says `failed: ...`
  /// for an "auto" op whose compile failed).
  std::vector<compile::OpStep> op_steps;
};

/// One line per op of the plan: built / skipped (why) / failed (first error) / not requested.
struct OpSummaryLine {
  std::string op;
  std::string status;   ///< "built", "skipped", "failed", "not requested"
  std::string reason;   ///< why (skipped, failed); empty for built and not requested
  double seconds = -1;  ///< the op's own compile step; -1 when it had none
};

/// The summary of a build's ops (plan.ops with the compile steps' outcome).
std::vector<OpSummaryLine> op_summary(const plan::Plan& plan, const std::vector<compile::OpStep>& steps);

/// Holds the build folder's lock for the whole build: a second build fails at once, clearly.
Result<Outcome> build_wheel(probe::Machine m, const fs::path& recipe_file, const Options& options);

/// The opforge_ops package shipped with this opforge (source tree or installed data folder).
fs::path default_python_package(const probe::FileSystem& fs);

}  // namespace opforge::pipeline
