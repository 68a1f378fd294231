#pragma once
/// plan::make's stages, each in its own file, for make.cpp to run in order (internal to plan/):
/// overrides.cpp (the environment's overrides of the recipe: arch list, jobs, epoch, compile
/// timeout), catalogue.cpp (the op catalogue and each op's verdict), toolchain.cpp (toolkit, host
/// compiler, arch list, CPU target), exports.cpp (the environment a build gets),
/// python_headers.cpp (the headers of the ops' Python extensions), version.cpp (the wheel's
/// version and DeepSpeed's).
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.h"

namespace opforge::plan {

using Env = std::map<std::string, std::string>;

/// The probe cache folder plan::make and its stages use (settings::cache_dir with --cache-dir).
fs::path cache_dir(probe::Machine m, const Options& opts);

// overrides.cpp

/// Overrides::arch_from for --nodes.
inline constexpr const char* kFromNodes = "node reports";

/// The environment variables that override the recipe, each checked before anything is probed.
struct Overrides {
  std::string arch_list;              ///< the node reports', else TORCH_CUDA_ARCH_LIST, else the recipe's [arch] list
  std::string arch_from;              ///< which of the two
  std::optional<unsigned> max_jobs;   ///< MAX_JOBS, capped
  std::optional<std::int64_t> epoch;  ///< SOURCE_DATE_EPOCH
};

Result<Overrides> read_overrides(const probe::Environment& environment, const recipe::Recipe& r, const Options& opts,
                                 std::vector<std::string>& notes);

/// Parallel jobs: -j, else MAX_JOBS, else the recipe's [build] jobs, else ("auto") as many as
/// both the cores and the available memory hold at the ops' expected peak per compile.
/// `pch`: precompiled torch headers are on (their making's memory is kept aside).
unsigned choose_jobs(probe::Machine m, const recipe::Recipe& r, const Options& opts, std::optional<unsigned> max_jobs,
                     const std::vector<ops::Decision>& decisions, std::vector<std::string>& notes, std::string& why,
                     bool pch = false);

/// SOURCE_DATE_EPOCH: the environment's, else the commit time, else 1980-01-01; never before
/// 1980-01-01 (a zip entry cannot hold an older time). A git source `plan` did not fetch
/// (source.not_fetched) has no time yet: the note says the build reads the commit's, and the
/// value returned stands for none (Plan::epoch_at_fetch).
std::int64_t choose_epoch(std::optional<std::int64_t> env_epoch, const SourceInfo& source,
                          std::vector<std::string>& notes);

/// OPFORGE_COMPILE_TIMEOUT: whole seconds, 60 to 604800 (a week); `fallback` when unset.

// catalogue.cpp

/// The ops of the source tree and, for DeepSpeed's op_builder/, the tree that holds it (empty
/// otherwise). Sets source.catalogue, and source.ops_dir: op_builder/ for DeepSpeed's, empty
/// without a catalogue.
struct OpCatalogue {
  std::vector<ops::Manifest> manifests;
  fs::path ds_root;
};

Result<OpCatalogue> load_catalogue(probe::Machine m, const recipe::Recipe& r, SourceInfo& source,
                                   const std::string& python, bool command, std::vector<std::string>& notes);

// toolchain.cpp

/// What the toolchain stages leave for the ops decision.
struct Toolchain {
  const cuda::Toolkit* tk = nullptr;  ///< plan.cuda.chosen, when a toolkit was found
  std::string unavailable;            ///< why CUDA ops cannot be built; empty when they can
  std::string fix;                    ///< how to make them buildable; empty: install a toolkit
  std::string probe_compiler;         ///< the C++ compiler the ops' probes run
};

/// The toolkit. A missing one is not yet an error: only a CUDA op that is explicitly requested
/// makes it one (ops::decide).
Result<Toolchain> resolve_toolkit(probe::Machine m, const Options& opts, Plan& plan);

/// The host compiler nvcc accepts; none makes CUDA ops unavailable (bad_input stops the plan).
Status resolve_host(probe::Machine m, const Options& opts, Plan& plan, Toolchain& chain);

/// The GPU architectures (TORCH_CUDA_ARCH_LIST, else the recipe's), once toolkit and compiler are usable.
Status resolve_arch(probe::Machine m, const Options& opts, const Overrides& overrides, Plan& plan, Toolchain& chain);

// cross.cpp

/// The machine the wheel is for: --platform beats [build] platform; bad_input for an unknown name
/// (the known ones listed).
Status choose_platform(const Options& opts, Plan& plan);

/// A cross-build's host compiler: the target's cross g++ that the toolkit's nvcc accepts (or,
/// without a toolkit, for the CPU code); unsatisfied (exit 3) naming Debian's package when it is
/// missing. The ops' probes then compile with it.
Status resolve_cross_host(probe::Machine m, Plan& plan, Toolchain& chain);

/// A cross-build that compiles CUDA code gets the target's CUDA runtime (cuda/target_files.h);
/// `opforge plan` (fetch_toolkit = false) only says what would be fetched.
Status provision_cross_runtime(probe::Machine m, const Options& opts, Plan& plan, const Toolchain& chain);

/// [build] cpu_target: every host compile goes through wrappers that pin -march
/// (compiler/cpu_target.h), kept in the cache folder so that every build folder shares them.
Status pin_cpu_target(probe::Machine m, const Options& opts, Plan& plan);

/// [compiler] host names a compiler and no toolkit chose it (no toolkit, or nvcc refuses it): the
/// CPU code is still compiled with it, never silently with the default one; exit 3 when it is not
/// installed.
Status named_host_for_cpu_code(probe::Machine m, Plan& plan, Toolchain& chain);

/// Whether the wheel carries CUDA code: a CUDA op is built, or a command build has a usable
/// toolkit (its setup.py decides what it compiles).
bool carries_cuda(const Plan& plan, const Toolchain& chain);

// exports.cpp

/// The toolkit and compiler a command build gets, worked out before the ops are decided:
/// DeepSpeed's is_compatible() runs in that environment. Empty when CUDA ops cannot be built.
Result<Env> toolkit_exports(probe::Machine m, const Options& opts, const Plan& plan, const Toolchain& chain);

/// What `opforge env` prints and a command build gets: the toolkit's exports when CUDA code is
/// built (`toolkit`), the pinned CPU target's compiler otherwise, DeepSpeed's switches, and every
/// op's build variable.
Result<Env> build_exports(probe::Machine m, Plan& plan, const Env& toolkit, const fs::path& ds_root);

// catalogue.cpp

/// Every op of the catalogue, built or skipped, with why (the notes leave out DeepSpeed's
/// builders nobody asked for: it has two dozen).
Result<std::vector<ops::Decision>> decide_ops(probe::Machine m, const Options& opts, Plan& plan,
                                              const OpCatalogue& catalogue, const Toolchain& chain, const Env& toolkit);

// python_headers.cpp

/// The project Python's header folder, for the built ops that have a [python_extension]: the
/// extension is compiled against the stable ABI, so the headers of any Python 3 at or above its
/// floor serve. Without them (no python3-dev, or an older Python), the extensions are left out
/// with a note (each has a Python fallback in its op's package, and the build's summary names
/// it); an op requested explicitly (true, DS_BUILD_<OP>=1) is built whole or not at all: unsatisfied.
Status find_python_include(probe::Machine m, Plan& plan);

/// A cross-build of a project's own command (setup.py): the build Python's configuration for the
/// target (Debian's _sysconfigdata__linux_<triple> in its stdlib: the extension suffix, the
/// platform tag), the target's pyconfig.h, and, with torch in the build Python, the same torch
/// release for the target (cuda/target_files.h; `opforge plan` only says what would be fetched).
/// Unsatisfied (exit 3) naming Debian's package for what is missing.
Status resolve_cross_command(probe::Machine m, const Options& opts, Plan& plan);

// version.cpp

/// DeepSpeed's version is version.txt + DS_BUILD_STRING: set so that its __version__ is the wheel's.
void deepspeed_version(probe::Machine m, Plan& plan, const fs::path& ds_root, Env& ex);

}  // namespace opforge::plan
