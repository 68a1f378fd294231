#pragma once
/// build_wheel's parts, each in its own file (internal to pipeline/): record_inputs.cpp (what the
/// build record says the wheel was made from), cpu_target_check.cpp (the wheel's ELF files against
/// [build] cpu_target), wheel_contents.cpp (the files, metadata and facts of the wheel),
/// op_summary.cpp (each op's outcome and the GPU code), native_build.cpp and command_build.cpp
/// (one backend each). pipeline.cpp runs them.
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compile/command/command_backend.h"
#include "compile/native/native.h"
#include "pipeline/pipeline.h"
#include "pipeline/wheelhouse.h"
#include "util/json.h"
#include "wheel/wheel.h"

namespace opforge::pipeline {

/// The cache folder (settings::cache_dir): compile peaks, scratch trees, wrappers.
fs::path cache_dir(probe::Machine m, const Options& options);

// record_inputs.cpp

/// "gcc 12.2.0": the host compiler's family and version; empty without one.
std::string compiler_text(const plan::Plan& plan);

/// The build record's inputs: opforge, the recipe, the source, toolkit, compiler, arch list, the
/// ops' flags (`graph`) and the recorded environment variables.
nlohmann::json record_inputs(probe::Machine m, const plan::Plan& plan, const compile::Graph& graph,
                             const fs::path& recipe_file, const std::string& recipe_text);

/// sha256 over everything that decides the wheel's bytes: the recorded inputs and every file.
std::string fingerprint(const wheel::Spec& spec, const nlohmann::json& inputs);

/// Where a build's compile steps ran (inputs.compile_steps): kept in the record beside the
/// fingerprint, never in the wheel (a step compiled on a build server gives the same bytes).
nlohmann::json compile_steps_json(const compile::SccacheStats& stats);

/// What a command build's record holds beyond record_inputs: the command, its log, the tree it ran
/// in, the ops decided (and, DeepSpeed, those its installed-ops record lists: setup.py may add
/// dependencies, async_io brings pin_memory), torch, and the environment beyond the caller's.
nlohmann::json command_inputs(probe::Machine m, const plan::Plan& plan, const compile::CommandOutput& out,
                              const fs::path& recipe_file, const std::string& recipe_text);

// cpu_target_check.cpp

/// With a cpu_target: the ELF files checked against it (the CPU target section of docs/recipe.md). A file may
/// exceed the target when [build] cpu_dispatch names it, or, for a native op, by the ISA flags its
/// op.toml gives single sources (those files are compiled for one SIMD level by design and the op
/// picks one at run time).
Status check_cpu_target(const plan::Plan& plan, const std::vector<std::pair<std::string, std::string_view>>& files,
                        const std::map<std::string, std::string>& op_of_path);

/// A command build's wheel checked against the recipe's cpu_target. A refused wheel stays in the
/// build folder (never in dist/) to be inspected.
Status check_command_wheel(const plan::Plan& plan, std::string_view bytes, const fs::path& wheel);

// variants.cpp

/// [wheel] variants: the variant wheel of `done.wheel` (wheel::make_variant_wheel) written into
/// dist/ beside it, and other variants of that same wheel name removed (they describe bytes that
/// are gone); fills done's variant_* fields. The caller holds dist/'s lock.
Status write_variant(probe::Machine m, Outcome& done);

/// A [matrix] arch cell's variant wheel (built into a folder of its own, beside its plain wheel)
/// copied into `dist`, the index and summaries rewritten, under dist/'s lock: the cell publishes its
/// variant alone, its fallback cell the plain wheel of that name. done.variant_wheel then names the
/// copy. failure when the wheel got no variant (its binaries hold no GPU code).
Status publish_variant(probe::Machine m, Outcome& done, const fs::path& dist, const std::string& cell,
                       std::chrono::steady_clock::duration took, const std::function<void(std::string_view)>& on_line);

/// The summary's row of a finished build (its cell "default" when `cell` is empty).
SummaryRow summary_row(const Outcome& done, const std::string& cell, std::chrono::steady_clock::duration took);

// wheel_contents.cpp

/// What a finished wheel needs of the system; nullopt when it holds no ELF file (or cannot be read,
/// which verify reports elsewhere).
std::optional<wheel::WheelNeeds> needs_of(std::string_view bytes);

/// The wheel's tags from its file name (name-version[-build]-python-abi-platform.whl).
std::vector<std::string> tags_of(const fs::path& wheel);

/// The GPU targets inside the wheel's ELF files ("sm_90", "compute_90"), sorted.
std::vector<std::string> wheel_gpu_targets(std::string_view bytes);
/// The same, per library of the wheel that holds GPU code (its path in the wheel → its targets).
std::map<std::string, std::vector<std::string>> wheel_gpu_targets_by_file(std::string_view bytes);

/// The ELF files (libraries, extensions) in the wheel.
std::size_t wheel_library_count(std::string_view bytes);

/// What goes into the wheel besides the package: the op libraries (their hashes into `hashes`) and
/// build_info.py, checked against the recipe's cpu_target, sorted by path.
Result<std::vector<wheel::File>> wheel_files(probe::Machine m, const plan::Plan& plan, const compile::RunResult& ran,
                                             const fs::path& package, wheel::BuildInfo& info,
                                             std::map<std::string, std::string>& hashes);

/// The native wheel's spec: the plan's name, version and metadata, `files`, the stable-ABI floor.
wheel::Spec wheel_spec(const plan::Plan& plan, const wheel::BuildInfo& info, std::vector<wheel::File> files);

// gpu_code_check.cpp

/// What a command build's wheel must hold of GPU code, from the plan.
struct GpuCodePromise {
  enum class Kind {
    unchecked,  ///< nothing planned (no toolkit), or nothing of the project is CUDA
    none,       ///< [arch] list = "none": no GPU code at all
    some,       ///< [arch] enforce = false: the project's own list, but some GPU code
    exactly,    ///< the plan's targets, no fewer and no others
  };
  Kind kind = Kind::unchecked;
  std::vector<std::string> targets;  ///< exactly/some: planned_gpu_targets
  std::string why;                   ///< why GPU code is expected: "the project has 3 CUDA sources (…)"
};

/// The promise of this plan: none for [arch] list = "none"; for an op tree, the plan's targets
/// when a CUDA op is built; for any other project, when its tree holds CUDA sources.
GpuCodePromise gpu_code_promise(const plan::Plan& plan);

/// What the finished wheel holds, as check_gpu_code reads it.
struct GpuCodeSeen {
  std::map<std::string, std::vector<std::string>> by_library;  ///< wheel_gpu_targets_by_file
  std::size_t libraries = 0;                                   ///< ELF files in the wheel
  bool wrapper_saw_nvcc = false;           ///< the nvcc wrapper logged at least one of the project's commands
  std::map<std::string, std::string> env;  ///< what the command ran with (a switch set there is said so)
  fs::path wheel;                          ///< the refused wheel's place (kept for inspection)
  fs::path log;                            ///< the command's output
};

/// failed (naming what is missing or extra, per library, the likely cause and the project's CUDA
/// switches) when the wheel breaks the promise; the wheel stays where `seen.wheel` says.
Status check_gpu_code(const plan::Plan& plan, const GpuCodePromise& promise, const GpuCodeSeen& seen);

// op_summary.cpp

/// Marks the plan's ops whose own compile step failed `failed` (reason: the first error and the
/// log), and every other op it was to build `built`: the build got this far.
void apply_op_steps(plan::Plan& plan, const std::vector<compile::OpStep>& steps);

/// op_summary's lines as the record keeps them (op, status, reason, seconds to a tenth).
nlohmann::json summary_json(const std::vector<OpSummaryLine>& lines);

}  // namespace opforge::pipeline
