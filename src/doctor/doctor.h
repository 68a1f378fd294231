#pragma once
/// `opforge doctor` as a value: what ds_report says and more — toolkits and the compilers each
/// accepts, torch's CUDA, host compilers, GPUs, libaio, ninja, ccache, sccache (and the recipe's
/// scheduler), the kernel, and the ops a recipe would build. Resolution only; the CLI renders it (text or JSON). Writes
/// nothing.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/host.h"
#include "compiler/resolve.h"
#include "cuda/toolkit.h"
#include "devices/arch.h"
#include "doctor/node.h"
#include "ops/ops.h"
#include "probe/machine.h"

namespace opforge::doctor {

namespace fs = std::filesystem;

/// One toolkit candidate, and for a valid one the host compilers its nvcc accepts.
struct ToolkitReport {
  cuda::Candidate candidate;
  std::optional<compiler::Limits> limits;           ///< set when candidate.toolkit is
  std::vector<std::string> accepts;                 ///< file names of the installed compilers within limits
  std::optional<compiler::ToolkitWrapper> wrapper;  ///< its own bin/g++ (Debian's package)
};

/// A tool found on PATH, with the first line of its `--version`.
struct ToolReport {
  fs::path path;
  std::string version;
};

/// What the recipe's sccache-dist scheduler answers now (`sccache --dist-status`).
struct SchedulerAnswer {
  std::string url;
  std::string state = "unknown";  ///< "connected", "not connected", "disabled", "unknown"
  int servers = 0, cpus = 0;
  std::string said;  ///< "2 build servers, 4 CPUs at URL: compile steps go there", or why not
};
/// Asks the scheduler at `url` with the token of `token_file` (or the environment's).
using AskScheduler = std::function<SchedulerAnswer(const std::string& url, const fs::path& token_file)>;

/// One thing a cross-build for another machine needs from this one.
struct CrossNeed {
  std::string what;        ///< "C++ compiler", "Python configuration", "CUDA runtime", ...
  std::string name;        ///< the program, file or requirement looked for
  std::string found;       ///< where it is; empty: missing
  std::string package;     ///< Debian's package that adds it (empty: the build fetches it from PyPI)
  std::string needed_for;  ///< which builds need it
};
/// What a cross-build for `platform` needs, each found or not, and the command that adds what is
/// missing (empty when nothing Debian packages is missing).
struct CrossReport {
  std::string platform;
  std::vector<CrossNeed> needs;
  std::string install;
};

struct Report {
  std::string python;                         ///< the interpreter asked about torch
  std::optional<cuda::TorchInfo> torch;       ///< nullopt: the interpreter could not run
  std::vector<compiler::Compiler> compilers;  ///< installed host compilers
  std::vector<ToolkitReport> toolkits;
  std::optional<std::string> cuda_error;  ///< no toolkit could be chosen (rendered error)
  std::string gpu_reader;                 ///< how the GPUs were read
  std::vector<devices::Gpu> gpus;
  std::optional<ToolReport> ninja, ccache, sccache;
  /// The recipe's [build] scheduler (cache = "sccache"), as it answers now.
  std::optional<SchedulerAnswer> scheduler;
  std::optional<std::string> kernel;     ///< /proc/sys/kernel/osrelease
  NodeInfo node;                         ///< what a wheel installed here will find (verify --nodes)
  std::vector<ops::Decision> ops;        ///< the recipe's (or the bundled one's) op decisions
  std::optional<std::string> ops_error;  ///< a recipe or manifest error (rendered)
  std::optional<std::string> libaio;     ///< the soname that loaded
  std::vector<std::string> warnings;     ///< torch/toolkit mismatch, mixed GPUs, old kernels
  std::vector<CrossReport> cross;        ///< one per machine this one cross-builds for
};

/// What cross-builds from this machine need, per other platform (doctor/cross.cpp): `python` is
/// the build Python (its stdlib and headers for the target), `tk` the toolkit a build would use.
std::vector<CrossReport> examine_cross(probe::Machine m, const std::string& python,
                                       const std::optional<cuda::TorchInfo>& torch, const cuda::Toolkit* tk);

/// Looks at the machine `m` with `python`'s torch; decides the ops of `recipe` (empty: the bundled
/// default recipe, whose absence is no error). A recipe's scheduler is asked through `ask`, when
/// given (the CLI hands in compile/'s, which starts an sccache session: a stage below doctor/).
Report examine(probe::Machine m, const std::string& python, const fs::path& recipe, const AskScheduler& ask = {});

}  // namespace opforge::doctor
