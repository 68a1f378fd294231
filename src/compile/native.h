#pragma once
/// The native backend: plan → build.ninja → ninja → one stripped shared library per op.
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compile/progress.h"
#include "plan/plan.h"
#include "probe/machine.h"

namespace opforge::compile {

namespace fs = std::filesystem;

/// One edge of the build graph.
struct Step {
  std::string rule;               ///< "cxx", "nvcc", "link", "strip"
  std::string description;        ///< "nvcc overflow/stats.cu"
  std::vector<std::string> argv;  ///< the exact command
  std::vector<fs::path> inputs;
  fs::path output;
  std::string depfile;  ///< compile steps: the -MF file
  /// Compile steps: argv[1, flags_end) are the flags (what the build record keeps; with ccache in
  /// front, argv[1] is the compiler); from there on the argv names the files (-MD -MF DEP -c SRC -o OBJ).
  std::size_t flags_end = 0;
};

struct OpOutputs {
  std::string op;
  fs::path library;                ///< the stripped libopforge_<op>.so
  std::vector<std::string> flags;  ///< the compile flags the op got (for the build record)
  fs::path extension{};            ///< the stripped <name>.abi3.so of its [python_extension]; empty: none
};

struct Graph {
  std::vector<Step> steps;                 ///< compiles, then links, then strips
  std::vector<OpOutputs> outputs;          ///< one per op built
  std::map<std::string, std::string> env;  ///< extra environment for ninja (ccache settings)
  /// nvcc --threads of every CUDA compile (one per architecture, as far as the jobs left idle by
  /// the few CUDA units allow); above 1, each nvcc counts as that many jobs: the nvcc steps run in
  /// a ninja pool of depth jobs / nvcc_threads.
  unsigned nvcc_threads = 1;
  unsigned nvcc_pool_depth = 0;  ///< 0: no pool
};

/// nvcc --threads for a build of `cuda_units` .cu files for `arches` architectures with `jobs`
/// parallel jobs: min(arches, jobs / min(jobs, cuda_units)), at least 1.
unsigned nvcc_threads_for(std::size_t arches, std::size_t cuda_units, unsigned jobs);

/// The exact commands for the plan's selected ops (ccache in front of the compiles with plan.cache
/// = ccache); nothing is run or written.
Result<Graph> describe(const plan::Plan& plan);

/// Renders build.ninja for `graph`.
std::string render_ninja(const Graph& graph, const fs::path& build_dir);

struct RunOptions {
  std::function<void(std::string_view)> on_line;  ///< ninja's output, as in a pipe ("[f/t] description" per step)
  StepSink on_step;                               ///< each step as it starts and as it ends
};

/// What ccache did during one build.
struct CacheStats {
  int calls = 0;        ///< compiler calls that went through ccache
  int hits = 0;         ///< results taken from the cache (local or remote)
  int remote_hits = 0;  ///< of those, from remote storage
  int misses = 0;       ///< compiled and stored
};

/// Parses ccache's stats log (its `stats_log` setting: "# <source>" per call, then the names of
/// the counters that call bumped); calls that neither hit nor missed were not cacheable.
CacheStats parse_ccache_stats_log(std::string_view text);

/// "ccache: 9 of 9 compiles were cache hits (100%), 9 from remote storage"
std::string describe_cache_stats(const CacheStats& stats);

struct RunResult {
  std::vector<OpOutputs> outputs;
  int steps_run = 0;                ///< edges ninja executed (0 on a no-op rebuild)
  std::string log;                  ///< ninja's full output
  std::optional<CacheStats> cache;  ///< with plan.cache = ccache: this build's hits and misses
  long peak_rss_kib = 0;            ///< the largest process ninja ran (ru_maxrss), KiB; 0 when unknown
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
