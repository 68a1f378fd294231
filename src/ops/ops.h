#pragma once
/// Reading op manifests and deciding which ops a plan builds. Called by plan/ and by doctor.
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ops/deepspeed.h"
#include "ops/manifest.h"
#include "probe/machine.h"
#include "recipe/recipe.h"
#include "util/error.h"

namespace opforge::ops {

/// Parses one op.toml (`path` is shown in errors and its folder becomes Manifest::dir).
/// Sources and include folders must stay inside `root` (default: the folder holding the op's
/// folder); control characters in flags, paths and names are bad_input (they would end a
/// command in build.ninja).
Result<Manifest> parse_manifest(const fs::path& path, std::string_view text, const fs::path& root = {});

/// Every `<ops_dir>/<op>/op.toml`, sorted by op name. A missing folder is bad_input; duplicate
/// names or build variables are bad_input. `root` is the source tree (default: ops_dir).
Result<std::vector<Manifest>> load_manifests(probe::Machine m, const fs::path& ops_dir, const fs::path& root = {});

/// What the ops need from the rest of the plan.
struct DecideContext {
  /// Empty when CUDA ops can be built; else why not (no toolkit, no accepted host compiler).
  std::string cuda_unavailable;
  /// How to make CUDA available, when it is not; empty: install a toolkit or set CUDA_HOME.
  std::string cuda_fix;
  /// Host C++ compiler used for probes: a path, or a command looked up on PATH.
  std::string probe_compiler = "c++";
  /// Folder of the probe cache (see probe::default_cache_dir); empty disables the cache.
  fs::path cache_dir;
  /// The project's own compatibility verdicts (DeepSpeed's is_compatible()), asked once for all
  /// the ops that are wanted and need no toolkit that is missing. Null: only op.toml probes count.
  std::function<Result<std::map<std::string, Compatibility>>(const std::vector<Manifest>&)> compatibility;
  /// With neither [ops] nor DS_BUILD_*: build nothing (DeepSpeed's own default, DS_BUILD_OPS=0,
  /// since its ops are JIT-compiled at run time) instead of every op "auto".
  bool default_off = false;
};

/// Decides every op (sorted by name): requested by DS_BUILD_* (when any is set, DeepSpeed rules)
/// or by the recipe's [ops]; then checked for compatibility (CUDA available, probes link).
/// bad_input: non-integer DS_BUILD_* values, DS_BUILD_<X> or [ops] entries naming no op.
/// unsatisfied: an op requested explicitly (true / DS_BUILD_<OP>=1) that cannot be built.
/// Probe results are cached in ctx.cache_dir keyed by the compiler's path + stamp and the probe.
Result<std::vector<Decision>> decide(probe::Machine m, const std::vector<Manifest>& manifests,
                                     const recipe::Recipe& recipe, const DecideContext& ctx);

/// Result of one compatibility probe.
struct ProbeOutcome {
  bool ok = false;
  bool cached = false;
  std::string output;              ///< compiler output on failure
  std::string compiler_missing{};  ///< why the probe could not run at all (no compiler); ok is false
};

/// Compiles and links the probe (or answers from the cache).
Result<ProbeOutcome> run_probe(probe::Machine m, const Probe& probe, const DecideContext& ctx);

/// The fix for a failed probe: the package per distribution and CFLAGS/LDFLAGS.
std::string probe_fix(const Probe& probe);

}  // namespace opforge::ops
