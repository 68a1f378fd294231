#pragma once
/// The native backend: plan → build.ninja → ninja → one stripped shared library per op. The graph
/// (graph.h), build.ninja (ninja_file.h) and ccache's statistics (cache/ccache_stats.h) have their own
/// files; this one runs ninja.
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compile/compiler_cache/ccache_stats.h"
#include "compile/compiler_cache/sccache.h"
#include "compile/native/graph.h"
#include "compile/native/ninja_file.h"
#include "compile/watch/progress.h"
#include "plan/plan.h"
#include "probe/machine.h"

namespace opforge::compile {

struct RunOptions {
  std::function<void(std::string_view)> on_line;  ///< ninja's output, as in a pipe ("[f/t] description" per step)
  StepSink on_step;                               ///< each step as it starts and as it ends
};

struct RunResult {
  std::vector<OpOutputs> outputs;
  int steps_run = 0;                ///< edges ninja executed (0 on a no-op rebuild)
  std::string log;                  ///< ninja's full output
  std::optional<CacheStats> cache;  ///< with plan.cache = ccache: this build's hits and misses
  /// With plan.cache = sccache: where the compile steps ran (each build server, here, the cache),
  /// and what the build did about distribution ("sccache: 2 build servers, ...").
  std::optional<SccacheStats> sccache;
  std::string sccache_said;
  long peak_rss_kib = 0;  ///< the largest process ninja ran (ru_maxrss), KiB; 0 when unknown
  /// "auto" ops whose compile or link failed → their first compiler error (they are not in
  /// `outputs`): with an op not requested explicitly, ninja keeps going past a failure (-k 0).
  std::map<std::string, std::string> failed;
};

/// Writes build.ninja atomically into plan.build_dir and runs ninja -j plan.jobs; with plan.cache
/// = ccache, the compiles run behind ccache (set_ccache_environment) and its counts come back.
/// failed (exit 1) with the failing command and its output when a step of an op requested
/// explicitly (Decision::required) fails, or one that names no op; an "auto" op whose step fails
/// is left out of `outputs` and named in `failed`.
Result<RunResult> run(probe::Machine m, const plan::Plan& plan, const RunOptions& options);

}  // namespace opforge::compile
