#pragma once
/// Every setting opforge reads, in one table (as ccache's config table): each environment variable
/// and recipe key with its parse rule, its default, whether it changes the wheel (then the build
/// record keeps it and `opforge verify` replays exactly those) and who reads it. The readers below
/// are the only code that reads these variables; docs/recipe.md's table of variables is generated
/// from this one (tests/settings_table_test.cpp compares them).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "probe/machine.h"
#include "target/arch.h"
#include "util/error.h"

namespace opforge::settings {

enum class Source { environment, recipe };

struct Setting {
  Source source;
  std::string_view name;      ///< "MAX_JOBS", "DS_BUILD_*" (a family); "build.jobs" for a recipe key
  std::string_view rule;      ///< how the value is read
  std::string_view fallback;  ///< what holds when it is unset
  bool changes_wheel;         ///< recorded in the build record and replayed by `verify`
  std::string_view readers;   ///< the code that reads it (through this module)
};

/// The table: environment variables first, then recipe keys in the recipe's order.
std::span<const Setting> table();

/// The recipe keys of one section ("build" → backend, command, ...), in the table's order: the
/// recipe parser accepts exactly these.
std::vector<std::string> recipe_keys(std::string_view section);

/// The environment variable `name`'s row (a family's, for DS_BUILD_AIO); nullptr when opforge does
/// not read it.
const Setting* find_variable(std::string_view name);

/// Whether the variable changes the wheel: the build record keeps its value (or that it was unset)
/// and `verify` rebuilds with exactly the recorded ones, every other of these hidden.
bool changes_wheel(std::string_view name);
/// The same set as a line for messages: "DS_*, TORCH_CUDA_ARCH_LIST, ...".
std::string wheel_variables_line();

/// docs/recipe.md's table of environment variables, generated from table().
std::string markdown_variables();

/// The largest number of parallel jobs: -j, MAX_JOBS and [build] jobs above it are capped (a
/// value ninja cannot use is not an error).
inline constexpr unsigned kMaxJobs = 4096;

/// `-j N` of `build` and `plan`: an integer in 1..kMaxJobs, else bad_input naming the flag.
Result<unsigned> parse_jobs_flag(std::string_view text);

/// DS_SKIP_CUDA_CHECK as DeepSpeed reads it (op_builder/builder.py, assert_no_cuda_mismatch:
/// `os.getenv("DS_SKIP_CUDA_CHECK", "0") == "1"`): exactly "1" skips; any other value does not.
bool skip_cuda_check(const probe::Environment& env);
/// A DS_SKIP_CUDA_CHECK value that looks meant to skip but does not ("true", "yes", "2"): the
/// value, for a note; nullopt when unset, empty, "0" or "1".
std::optional<std::string> ignored_skip_cuda_check(const probe::Environment& env);

/// TORCH_CUDA_ARCH_LIST, read and validated once: nullopt when unset or blank; bad_input naming
/// the variable when it is not an arch list PyTorch takes.
struct ArchList {
  std::string text;
  std::vector<target::Arch> arches;
};
Result<std::optional<ArchList>> arch_list(const probe::Environment& env);

/// MAX_JOBS: nullopt when unset or empty; capped at kMaxJobs (`capped` then says so); bad_input
/// unless a positive integer.
struct Jobs {
  unsigned jobs = 0;
  bool capped = false;
  long long asked = 0;
};
Result<std::optional<Jobs>> max_jobs(const probe::Environment& env);

/// SOURCE_DATE_EPOCH: nullopt when unset or empty; bad_input unless a non-negative integer.
Result<std::optional<std::int64_t>> source_date_epoch(const probe::Environment& env);

/// The variables that name a toolkit's root, in the order they are tried.
inline constexpr std::string_view kToolkitVariables[] = {"CUDA_HOME", "CUDA_PATH"};
/// Each of them that is set and not empty, in that order: {name, value}.
std::vector<std::pair<std::string, std::string>> toolkit_roots(const probe::Environment& env);

/// The cache folder: `override_dir` when not empty (plan::Options::cache_dir), else
/// probe::default_cache_dir(env) (OPFORGE_CACHE_DIR, XDG_CACHE_HOME, HOME). Empty: no cache.
std::filesystem::path cache_dir(const probe::Environment& env, const std::filesystem::path& override_dir = {});

/// The words of CFLAGS, CXXFLAGS and LDFLAGS, in that order: what DeepSpeed users set to point a
/// probe at a library installed off the default paths (`-I/opt/aio/include -L/opt/aio/lib`).
std::vector<std::string> user_compiler_flags(const probe::Environment& env);

/// The variables DeepSpeed's builders read in is_compatible() (part of the key of its cached answers).
bool read_by_deepspeed_builders(std::string_view name);

}  // namespace opforge::settings
