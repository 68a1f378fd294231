#pragma once
/// `opforge build` as a value-returning stage: plan → compile → wheel → build record.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compile/command/op_steps.h"
#include "compile/native/native.h"
#include "plan/plan.h"
#include "record/record.h"
#include "wheel/wheel.h"

namespace opforge::pipeline {

namespace fs = std::filesystem;

struct Options {
  plan::Options plan;
  std::optional<fs::path> build_dir;  ///< overrides the recipe's
  std::optional<fs::path> dist_dir;   ///< overrides the recipe's
  fs::path python_package;            ///< folder of opforge_ops (src/python/opforge_ops)
  std::function<void(std::string_view)> on_line;
  compile::StepSink on_step;       ///< each compile step (native) or op and command (command) as it starts and ends
  std::string cell;                ///< the matrix cell built, for dist/SUMMARY.md ("default" when empty)
  std::optional<int> glibc_floor;  ///< --glibc (2.X → X): beats the recipe's [wheel] glibc
  /// [matrix] arch's fallback cell: the plain wheel alone, no variant wheel written or removed (the
  /// cell's variants are its arch cells' wheels, beside it in dist/).
  bool plain_only = false;
};

struct Outcome {
  plan::Plan plan;
  fs::path wheel;
  std::string wheel_sha256;
  std::vector<std::string> tags;
  std::string platform_reason;
  /// What the wheel's ELF files need of glibc/libstdc++, and the distributions that excludes
  /// (printed when the recipe sets no floor); nullopt when it holds no ELF file.
  std::optional<wheel::WheelNeeds> needs;
  fs::path record_path;
  record::Record record;
  int steps_run = 0;
  std::optional<compile::CacheStats> cache;      ///< with ccache (plan.cache): its hits and misses in this build
  std::optional<compile::SccacheStats> sccache;  ///< with sccache: where the compile steps ran
  std::string sccache_said;                      ///< with sccache: what it did about distribution
  bool reused = false;                           ///< an identical wheel from the same inputs was already in dist/
  /// Command builds of a DeepSpeed tree: each op's compile step (plan.ops then says `failed: ...`
  /// for an "auto" op whose compile failed).
  std::vector<compile::OpStep> op_steps;
  /// Command builds: the GPU targets the project's own nvcc options asked for (empty when it named
  /// none) and those the wheel's fatbinaries hold ("sm_90", "compute_90": PTX).
  std::vector<std::string> project_arch;
  std::vector<std::string> compiled_arch;
  /// Command builds: the CUDA compile steps that ran nvcc without opforge's wrapper (sources).
  std::vector<std::string> unwrapped;
  std::map<std::string, std::vector<std::string>> compiled_arch_by_file;  ///< each library's, when they differ
  /// Command builds: what the wheel's libraries need of torch and the Requires-Dist that follows
  /// ("torch: C++ ABI (…): Requires-Dist torch==2.15.*"); empty when nothing links torch.
  std::string torch_said;
  /// Command builds that resumed a kept scratch tree: "resumed: 7 of 10 compile steps reused …".
  std::string resume_said;
  /// Command builds: their compile steps' peak memory ("memory: 10 compile steps, 2 at once; the
  /// heaviest selective_scan_bwd_bf16_complex.cu 2.1 GiB (301 s), …"); empty when none was seen.
  std::string memory_said;
  std::string pch_said;  ///< precompiled torch headers: made, used, compiled without (command builds)
  /// [wheel] variants: the variant wheel written beside the wheel (empty: none, the binaries said
  /// nothing a variant could carry), its properties and what they could not say.
  fs::path variant_wheel;
  std::vector<std::string> variant_properties;
  std::vector<std::string> variant_notes;
};

/// The GPU targets the plan compiles: "sm_XY" for each arch, "compute_XY" for +PTX.
std::vector<std::string> planned_gpu_targets(const plan::Plan& plan);

/// One line on a command build's GPU code: what the project asked for, what the plan says and what
/// the wheel holds (empty when the plan has no arch list and the wheel no GPU code).
std::string arch_summary(const plan::Plan& plan, const std::vector<std::string>& project,
                         const std::vector<std::string>& compiled, const std::vector<std::string>& unwrapped = {});

/// One line per op of the plan: built / skipped (why) / failed (first error) / not requested.
struct OpSummaryLine {
  std::string op;
  ops::OpStatus status;  ///< built, skipped, failed, not_requested (a finished build's)
  std::string reason;    ///< why (skipped, failed); empty for built and not requested
  double seconds = -1;   ///< the op's own compile step; -1 when it had none
};

/// The summary of a build's ops (plan.ops with the compile steps' outcome).
std::vector<OpSummaryLine> op_summary(const plan::Plan& plan, const std::vector<compile::OpStep>& steps);

/// Holds the build folder's lock for the whole build: a second build fails at once, clearly.
Result<Outcome> build_wheel(probe::Machine m, const fs::path& recipe_file, const Options& options);

/// The opforge_ops package shipped with this opforge (source tree or installed data folder).
fs::path default_python_package(const probe::FileSystem& fs);

}  // namespace opforge::pipeline
