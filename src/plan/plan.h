#pragma once
/// The plan: pure data, everything decided before anything is compiled. `opforge plan` prints it,
/// `opforge env` prints its exports, `opforge build` executes it.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/host.h"
#include "cuda/provision.h"
#include "cuda/target_files.h"
#include "cuda/toolkit.h"
#include "devices/arch.h"
#include "ops/manifest.h"
#include "probe/machine.h"
#include "project/build_files.h"
#include "recipe/recipe.h"
#include "target/platform.h"
#include "wheel/wheel.h"

namespace opforge::plan {

namespace fs = std::filesystem;

/// Where the op catalogue came from.
enum class Catalogue {
  op_toml,     ///< manifests (op.toml) in ops_dir
  op_builder,  ///< DeepSpeed's builder classes
  none,        ///< a plain setup.py project (command backend only): the command decides
};

/// "op.toml", "op_builder" or "none", as plans and records write it.
constexpr std::string_view catalogue_name(Catalogue c) {
  return c == Catalogue::op_toml ? "op.toml" : c == Catalogue::op_builder ? "op_builder" : "none";
}

/// ArchDecision::source of a plan whose recipe says `[arch] list = "none"`: a wheel without GPU
/// code on purpose (no arch list exported, CUDA ops unavailable, a wheel with GPU code refused).
inline constexpr std::string_view kNoGpuCodeSource = "recipe [arch] list = \"none\"";

struct SourceInfo {
  fs::path root;       ///< absolute source tree
  fs::path ops_dir;    ///< absolute folder of the op manifests
  std::string commit;  ///< full hex commit, empty when not a git tree
  bool dirty = false;
  std::optional<std::int64_t> commit_time;  ///< seconds since the epoch
  Catalogue catalogue = Catalogue::op_toml;
  /// A git source that plan did not fetch (plan writes nothing): what would be fetched. The tree,
  /// and so the op verdicts, are then unknown.
  std::string not_fetched;
  /// A git source's clone (<cache>/git/<name>-<hash>), held shared while the plan lives, so that
  /// `opforge cache prune` leaves it alone while a build reads its checkout.
  std::shared_ptr<void> hold;
};

struct Plan {
  recipe::Recipe recipe;
  SourceInfo source;
  cuda::Resolution cuda;  ///< chosen may be empty when no CUDA op is built
  std::optional<compiler::HostChoice> host;
  devices::ArchDecision arch;
  std::vector<ops::Decision> ops;  ///< every op found, built or not, sorted by name
  unsigned jobs = 1;
  std::string jobs_reason{};  ///< "-j", "MAX_JOBS", "2 cores; 21.4 GiB available / 3.0 GiB per nvcc compile"
  /// jobs came from the cores and memory (no -j, MAX_JOBS or [build] jobs): a build whose compile
  /// steps go to build servers runs as many as they have CPUs (compile::distributed_jobs).
  bool jobs_auto = false;
  recipe::Cache cache = recipe::Cache::none;  ///< the compiler cache: --cache, else [build] cache
  /// Precompiled torch headers for the host compiles (compile/pch/pch.h): [build] pch and --no-pch,
  /// where they can be used; pch_why says why on or off.
  bool pch = false;
  std::string pch_why;
  /// gcc's --param=ggc-min-heapsize (KiB) on every host compile of a command build ([build]
  /// gcc_gc_heap_mib; 0: none, gcc's default); gcc_gc_why says why.
  std::uint64_t gcc_gc_heap_kib = 0;
  std::string gcc_gc_why;
  std::int64_t source_date_epoch = wheel::kMinEpoch;  ///< clamped to it
  std::string wheel_version;                          ///< "0.1.0+cu13.g8cd046f"
  fs::path build_dir;                                 ///< absolute
  fs::path dist_dir;                                  ///< absolute
  /// A git source not fetched yet and no SOURCE_DATE_EPOCH: the build takes the commit's time,
  /// which `plan` cannot read (source_date_epoch is then no value, and not exported).
  bool epoch_at_fetch = false;
  /// Exports for `opforge env` and for the command backend: CUDA_HOME, PATH, LD_LIBRARY_PATH,
  /// TORCH_CUDA_ARCH_LIST, DS_BUILD_*, MAX_JOBS, SOURCE_DATE_EPOCH ...
  std::map<std::string, std::string> exports;
  /// The toolkit's CUDA minor version differs from torch's (same major): accepted with a warning,
  /// and DeepSpeed's stricter check is told through DS_SKIP_CUDA_CHECK=1.
  bool cuda_minor_mismatch = false;
  /// [cuda] provision = "pypi" and no installed toolkit has torch's exact CUDA: the toolkit from
  /// PyPI (fetched, reused, or, for `opforge plan`, what would be fetched).
  std::optional<cuda::Provision> provision;
  /// The machine the wheel's code is for (--platform, [build] platform, else this one's).
  const target::Platform* platform = &target::host_platform();
  /// A cross-build that compiles CUDA code: the target machine's CUDA runtime (headers and
  /// cudart), fetched into the cache (or, for `opforge plan`, what would be fetched).
  std::optional<cuda::TargetFiles> cuda_target;
  /// ... and what nvcc would add for the target itself (bin/nvcc.profile: -I
  /// targets/<machine>/include, -isystem .../include/cccl), which an x86-64 toolkit lacks: the
  /// target runtime's headers and this nvcc's own CCCL (cub, thrust; host-independent).
  std::vector<std::string> cross_nvcc_includes;
  /// A cross-build of a project's own command: the target's view of the build Python
  /// (resolve_cross_command). setup.py runs with this machine's Python and torch; Python's
  /// configuration, the compilers and the torch they compile and link against are the target's.
  struct CrossCommand {
    std::string sysconfig;      ///< _PYTHON_SYSCONFIGDATA_NAME: "_sysconfigdata__linux_aarch64-linux-gnu"
    fs::path sysconfig_file;    ///< where the build Python finds it (its stdlib)
    std::string host_platform;  ///< _PYTHON_HOST_PLATFORM: "linux-aarch64" (setuptools' platform tag)
    std::string ext_suffix;     ///< what the module's EXT_SUFFIX says: ".cpython-311-aarch64-linux-gnu.so"
  };
  std::optional<CrossCommand> cross_command;
  /// ... and the torch it compiles against: the build torch's release for the target machine.
  std::optional<cuda::TargetTorch> target_torch;
  /// The wheel's code is for another machine than this one.
  bool cross() const { return platform != &target::host_platform(); }
  /// Requires-Dist values the wheel gets beyond its own ("torch==2.15.*" for a matrix cell).
  std::vector<std::string> requires_dist;
  std::string python;  ///< the project's Python (torch, DeepSpeed's checks)
  /// The folder holding Python.h that ops' Python extensions compile against (the project
  /// Python's); empty when no built op has one, or no headers were found (they are then left out).
  fs::path python_include;
  /// A cross-build with Debian's multiarch Python headers: the folder (/usr/include) that holds
  /// the target's <triple>/python3.X/pyconfig.h, searched after the cross compiler's own
  /// (-idirafter); empty otherwise.
  fs::path python_arch_include;
  /// Command builds: what the project's build files say of its CUDA (its switches, its CUDA sources).
  project::BuildFiles project_files;
  std::vector<std::string> notes;  ///< one line per decision worth explaining
  std::vector<std::string> warnings;
  /// The limit of each compile command (the ninja run, [build] command, an op's setup.py step):
  /// OPFORGE_COMPILE_TIMEOUT seconds, else 6 hours. A step that never ends (an nvcc that hangs)
  /// ends the build instead of holding it forever.
  std::chrono::seconds compile_timeout{6 * 3600};
};

/// The resolution stages plan::make calls; defaults are the real cuda/, compiler/, devices/
/// functions. Tests replace them to describe a machine that cannot exist here; every one is set.
struct Resolvers {
  std::function<Result<cuda::Resolution>(probe::Machine, const std::string& version_spec, const std::string& python)>
      cuda;
  std::function<std::map<std::string, std::string>(const cuda::Toolkit&, const probe::Environment&)> cuda_exports;
  std::function<Result<compiler::HostChoice>(probe::Machine, const cuda::Toolkit&, const std::string& host,
                                             bool allow_unsupported, const fs::path& shim_dir)>
      host;
  std::function<Result<devices::ArchDecision>(probe::Machine, const cuda::Toolkit&, const std::string& recipe_list,
                                              const std::string& fallback)>
      arch;
};

/// The real resolvers.
Resolvers default_resolvers();

/// The source stage: a local tree's commit and dirtiness, or a git source fetched into the cache
/// (source/); release mode refuses dirty trees and moving revs.
/// `own_outputs` (absolute: the build and dist folders, the cache) are opforge's own and never make
/// the tree dirty.
Result<SourceInfo> inspect_source(probe::Machine m, const recipe::Recipe& r, const std::vector<fs::path>& own_outputs);
/// With fetch = false, a git source whose repository is not in the cache yet is not cloned:
/// SourceInfo::not_fetched says what would be fetched (root stays empty).
Result<SourceInfo> inspect_source(probe::Machine m, const recipe::Recipe& r, const std::vector<fs::path>& own_outputs,
                                  bool fetch);

struct Options {
  bool release = false;                       ///< --release: refuse dirty trees and moving revs
  std::optional<std::string> release_commit;  ///< --release-of: release mode pinned to this commit
  std::optional<unsigned> jobs;               ///< -j N (beats MAX_JOBS and the recipe)
  std::optional<std::string> python;          ///< --python: the interpreter whose torch decides CUDA
  std::optional<recipe::Cache> cache;         ///< --cache (beats the recipe's [build] cache, none included)
  bool no_pch = false;                        ///< --no-pch (beats [build] pch)
  /// --nodes: the arch list the node reports' GPUs make. It decides exactly as TORCH_CUDA_ARCH_LIST
  /// set to it would (which it beats), and the plan says it came from the node reports.
  std::optional<std::string> node_arch_list;
  /// A [matrix] arch cell's list (its own, or its fallback's union): decides as the recipe's [arch]
  /// list would (TORCH_CUDA_ARCH_LIST and --nodes beat it), and the plan says it came from the matrix.
  std::optional<std::string> cell_arch_list;
  /// Inspects the source tree: commit, dirty, commit time. When null, the tree is the recipe's
  /// [source] path with no commit.
  std::function<Result<SourceInfo>(probe::Machine, const recipe::Recipe&, const std::vector<fs::path>&)>
      inspect_source = [](probe::Machine m, const recipe::Recipe& r, const std::vector<fs::path>& own_outputs) {
        return plan::inspect_source(m, r, own_outputs);
      };
  Resolvers resolvers = default_resolvers();
  /// --build-dir / --dist-dir (absolute): they beat the recipe's, and everything placed in the
  /// build folder (the compiler shim, its wrappers) follows them.
  std::optional<fs::path> build_dir, dist_dir;
  /// --platform: the machine the wheel is for (beats [build] platform); a name or alias.
  std::optional<std::string> platform;
  /// [cuda] provision = "pypi": false (`opforge plan`) only says what would be fetched.
  bool fetch_toolkit = true;
  /// A matrix cell's build: the wheel's Requires-Dist pins the torch it was built with
  /// ("torch==2.15.*"), whatever the project's own requirements say.
  bool pin_torch = false;
  /// One line per long step the plan takes itself (provisioning a toolkit); may be null.
  std::function<void(std::string_view)> on_progress;
};

/// Resolves everything the build needs, writing nothing but the probe cache.
/// bad_input: recipe or environment values; unsatisfied: the machine cannot satisfy the recipe.
Result<Plan> make(probe::Machine m, const fs::path& recipe_file, const Options& opts);

/// A program a build of the plan runs.
struct Tool {
  std::string program;  ///< a name looked up on the build's PATH, or a path
  std::string why;      ///< "runs the compile steps"
};

/// The strip a plan's libraries go through: the build machine's, or for a cross-build the
/// target's binutils (<triple>-strip, which comes with Debian's cross g++).
std::string strip_program(const Plan& plan);
/// The programs a build runs: the command's program (command backend), ninja, the compilers and
/// strip (native backend, when an op is built), ccache (--cache ccache).
std::vector<Tool> needed_tools(const Plan& plan);

/// The PATH the build's programs are looked up on: the plan's exported PATH, else the caller's.
std::string build_path(const probe::Environment& env, const Plan& plan);

/// unsatisfied (exit 3) naming every needed_tools() program that is missing and the package that
/// provides it; `opforge build` checks it before any work starts, `opforge plan` shows it.
Status check_tools(probe::Machine m, const Plan& plan);

/// The wheel's version: `version` + "+" + the expanded local_version template (or none).
/// bad_input when the label breaks PEP 440's local-version rules ([a-z0-9] segments with dots).
/// {torch_major}{torch_minor} come from `torch_version` ("2.15.0+cu132"); without one their
/// segment is left out.
Result<std::string> wheel_version(const recipe::Recipe& recipe, const cuda::Toolkit* toolkit, const SourceInfo& source,
                                  const std::optional<std::string>& torch_version = std::nullopt);

/// What the recipe and the plan decide of the wheel, whichever backend makes it (the one way from
/// a plan to wheel options: the native backend's wheel::Spec and the command backend's
/// wheel::NormalizeOptions both take these).
struct WheelOptions {
  std::string version;  ///< plan.wheel_version; empty: the project's own (a command build)
  std::int64_t source_date_epoch = wheel::kMinEpoch;
  int glibc_floor = 0;                     ///< [wheel] glibc; 0: none
  std::vector<std::string> requires_dist;  ///< torch pins: a DeepSpeed tree's torch, a matrix cell's
};
WheelOptions wheel_options(const Plan& plan);

/// "2.15.0+cu132" → "torch==2.15.*"; empty when the version has no major.minor.
std::string torch_pin(const std::string& torch_version);
/// "torch>=2.15" for "2.15.0+cu130": what a library of torch's stable C ABI alone needs (that
/// torch's symbols, which later releases keep); "" when the version is not X.Y[...].
std::string torch_floor(const std::string& torch_version);

}  // namespace opforge::plan
