#pragma once
/// The native backend's build graph: the exact compile, link and strip commands for the plan's
/// ops (what build.ninja holds and `opforge plan` prints); nothing is run or written.
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "util/error.h"

namespace opforge::compile {

/// One edge of the build graph.
struct Step {
  std::string rule;               ///< "cxx", "nvcc", "link", "strip"
  std::string description;        ///< "nvcc overflow/stats.cu"
  std::vector<std::string> argv;  ///< the exact command
  std::vector<std::filesystem::path> inputs;
  std::filesystem::path output;
  std::string depfile;  ///< compile steps: the -MF file
  /// Compile steps: argv[1, flags_end) are the flags (what the build record keeps; with ccache in
  /// front, argv[1] is the compiler); from there on the argv names the files (-MD -MF DEP -c SRC -o OBJ).
  std::size_t flags_end = 0;
};

struct OpOutputs {
  std::string op;
  std::filesystem::path library;      ///< the stripped libopforge_<op>.so
  std::vector<std::string> flags;     ///< the compile flags the op got (for the build record)
  std::filesystem::path extension{};  ///< the stripped <name>.abi3.so of its [python_extension]; empty: none
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

}  // namespace opforge::compile
