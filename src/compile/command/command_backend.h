#pragma once
/// `[build] backend = "command"`: runs a project's own build command (e.g. `python setup.py
/// bdist_wheel` of a DeepSpeed checkout) in the plan's environment, then re-packs the wheel it made
/// deterministically with wheel::normalize.
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compile/command/op_steps.h"
#include "compile/compiler_cache/sccache.h"
#include "compile/pch/pch.h"
#include "compile/watch/ninja_log.h"
#include "compile/watch/progress.h"
#include "compile/watch/step_watch.h"
#include "plan/plan.h"
#include "probe/machine.h"
#include "util/error.h"
#include "wheel/wheel.h"

namespace opforge::compile {

struct CommandOutput {
  std::filesystem::path wheel;      ///< the normalised wheel in CommandRun::wheel_dir
  std::filesystem::path raw_wheel;  ///< the wheel the command produced (removed with the scratch tree)
  std::filesystem::path tree;       ///< the scratch tree the command ran in
  std::string tree_hash;            ///< its content hash
  /// DeepSpeed trees: the ops its git_version_info_installed.py lists as installed.
  std::vector<std::string> installed_ops;
  std::filesystem::path log;               ///< plan.build_dir / "command.log": the command's full output
  std::map<std::string, std::string> env;  ///< what the command ran with (for the build record)
  /// The scratch tree was one an interrupted build left (make_scratch_tree: resumed), with
  /// `restored` source files written again.
  bool resumed = false;
  int restored = 0;
  /// The ninja steps (torch's BuildExtension) the command found finished and reused, and those it
  /// compiled, with their times (from the tree's .ninja_log files; all zero without ninja).
  StepReuse ninja_steps;
  /// Each compile step the command ran, with its peak memory (StepWatch; sampled from /proc).
  std::vector<StepPeak> step_peaks;
  /// DeepSpeed trees built by a setup.py command: each op's own compile step, in plan order.
  std::vector<OpStep> op_steps;
  /// The GPU targets the project's own nvcc options asked for ("sm_80", "compute_90": PTX), from
  /// the nvcc wrapper's log (project_arch_targets); empty when no nvcc command named any, or when
  /// every compile was a cache hit and no nvcc ran.
  std::vector<std::string> project_arch;
  /// The nvcc commands the wrapper ran (its log's lines): 0 when the project's nvcc never went
  /// through it (or every compile was a compiler-cache hit).
  int nvcc_commands = 0;
  /// The nvcc wrapper the project's CUDA compiles run through; empty without a toolkit.
  std::filesystem::path nvcc_wrapper;
  /// The toolkit view CUDA_HOME named (toolkit_view.h); empty when there is none.
  std::filesystem::path toolkit_view;
  /// CUDA compile steps the step watcher saw run without the wrapper (their sources): the plan's
  /// arch list and reproducibility flags did not reach them.
  std::vector<std::string> unwrapped;
  /// cache = "sccache": where the compile steps ran (every command's counters summed), and what
  /// the build did about distribution.
  std::optional<SccacheStats> sccache;
  std::string sccache_said;
  /// What the wheel's libraries need of torch (the strongest of them; evidence "file: symbol"),
  /// and the Requires-Dist it was given for it ("torch==2.15.*", "torch>=2.15"; empty: none).
  wheel::TorchLinkage torch_link;
  std::string torch_requirement;
  /// Precompiled torch headers ([build] pch): what the host compiles did with them (pch.log).
  std::optional<pch::Summary> pch;
  /// Why a stable-ABI requirement says that release ("torch_from_blob: torch 2.11 and later").
  std::string torch_floor_why;
};

/// Where run_command_backend writes, and who hears of its progress.
struct CommandRun {
  /// The folder the normalised wheel is written into (the pipeline's: a folder inside the build
  /// folder, committed into dist/ afterwards with its record).
  std::filesystem::path wheel_dir{};
  std::function<void(std::string_view)> on_line{};  ///< each output line (progress)
  StepSink on_step{};  ///< each op compiled alone, then the command, as it starts and as it ends
};

/// Copies plan.source.root into a scratch tree (make_scratch_tree under settings::cache_dir), checks
/// the compiler shim the plan uses is there (compiler::check_shim: the pipeline makes it), and runs
/// plan.recipe.build.command there with command_environment(settings::ChildEnv(m.env, settings::Child::command).vars(),
/// plan, tree), For a DeepSpeed tree whose command runs setup.py, each op the plan builds is first compiled alone
/// (`setup.py build_ext` with only its build variable on, its output in plan.build_dir/ops/<op>.log): an op whose
/// compile fails is dropped (its variable is 0 for the command) unless it was requested explicitly
/// (Decision::required), which fails the build (ErrorKind::failed) naming the op and its first compiler error. passing
/// each output line to `run.on_line` (progress), keeps the full output in the log, and on a non-zero exit fails
/// (ErrorKind::failed) with the log's last lines. The wheel is the one file matching wheel_glob that is new or changed
/// by this run; it is normalised into `run.wheel_dir` with plan.wheel_version (when not empty) in its file name,
/// .dist-info and METADATA. DeepSpeed trees: the wheel's deepspeed/git_version_info_installed.py gets version='<wheel
/// version>'; with a torch version known, METADATA requires torch==X.Y.* (compiled extensions load
/// only with the torch they were built against). The scratch tree is removed afterwards; a build
/// killed or failed leaves it, and the next build of the same content and compile commands resumes
/// it (make_scratch_tree), ninja then skipping every object finished before.
Result<CommandOutput> run_command_backend(probe::Machine m, const plan::Plan& plan, const CommandRun& run);

}  // namespace opforge::compile
