#pragma once
/// Every setting opforge reads, in one table (as ccache's config table): each environment variable
/// and recipe key with its parse rule, its default, whether it changes the wheel (then the build
/// record keeps it and `opforge verify` replays exactly those) and who reads it. The readers below
/// are the only code that reads these variables; docs/recipe.md's table of variables is generated
/// from this one (tests/settings_table_test.cpp compares them).
#include <chrono>
#include <cstdint>
#include <map>
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

/// What the build inside a root (`--root`, [wheel] root) gets of an environment variable.
enum class Inside {
  passed,  ///< the host's value, as it is (every variable that changes the wheel is passed)
  set,     ///< opforge sets its own value inside (PATH, HOME, LANG, the cache folder)
  host,    ///< it names the host's own state (its loader, its Python, its session): not passed
};
std::string_view inside_name(Inside i);

/// Which of the children opforge starts get an environment variable (child_environment).
enum class Reach {
  child,    ///< every child but a compile (a variable the table does not name too)
  compile,  ///< every child, a compile included: sccache sends a compile's environment to a build server
  opforge,  ///< opforge alone, never a child but another opforge (inside a root): a secret
};
std::string_view reach_name(Reach r);

struct Setting {
  Source source;
  std::string_view name;      ///< "MAX_JOBS", "DS_BUILD_*" (a family); "build.jobs" for a recipe key
  std::string_view rule;      ///< how the value is read
  std::string_view fallback;  ///< what holds when it is unset
  bool changes_wheel;         ///< recorded in the build record and replayed by `verify`
  /// Who reads it: `settings::fn (dir/file.cpp, ...)` when read through a function of this module
  /// (tests/settings_table_test.cpp checks both against the code), or the program that reads it.
  std::string_view readers;
  Inside inside = Inside::passed;  ///< environment variables: what a build inside a root gets
  bool deepspeed = false;          ///< DeepSpeed's builders read it in is_compatible()
  Reach reach = Reach::child;      ///< environment variables: which children get it
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

/// The cache folder, the one way it is chosen: probe::default_cache_dir(env) (OPFORGE_CACHE_DIR,
/// XDG_CACHE_HOME, HOME). Empty: no cache.
std::filesystem::path cache_dir(const probe::Environment& env);

/// The words of CFLAGS, CXXFLAGS and LDFLAGS, in that order: what DeepSpeed users set to point a
/// probe at a library installed off the default paths (`-I/opt/aio/include -L/opt/aio/lib`).
std::vector<std::string> user_compiler_flags(const probe::Environment& env);

/// PATH as the machine has it: where tools are looked up ("" when unset).
std::string path(const probe::Environment& env);

/// LD_LIBRARY_PATH; nullopt when unset.
std::optional<std::string> library_path(const probe::Environment& env);

/// CUDACXX: the caller's CUDA compiler for CMake, which a command build replaces with the plan's
/// (plan/exports.cpp says so); nullopt when unset or empty.
std::optional<std::string> cuda_compiler(const probe::Environment& env);

/// CONDA_PREFIX: a conda environment that may hold a toolkit; nullopt when unset or empty.
std::optional<std::string> conda_prefix(const probe::Environment& env);

/// pyenv's global version file: $PYENV_ROOT/version, else $HOME/.pyenv/version; empty when
/// neither is set.
std::filesystem::path pyenv_version_file(const probe::Environment& env);

/// The variables that change what a Python puts on sys.path or which interpreter a shim (pyenv, a
/// venv's activate) starts: PYTHONPATH, PYTHONHOME, PYTHONNOUSERSITE, PYTHONSAFEPATH,
/// PYTHONUSERBASE, PYTHONPLATLIBDIR, PYENV_VERSION, PYENV_ROOT, VIRTUAL_ENV, CONDA_PREFIX, HOME;
/// each with its value, nullopt when unset.
std::vector<std::pair<std::string, std::optional<std::string>>> python_variables(const probe::Environment& env);

/// CUDA_VISIBLE_DEVICES as set (nullopt when unset): the GPUs nvidia-smi's list is cut to.
std::optional<std::string> visible_devices(const probe::Environment& env);

/// OPFORGE_PCH_LOG (set by a command build for its host compiles, compile/pch/pch.h): the log file;
/// nullopt when unset or empty.
std::optional<std::filesystem::path> pch_log(const probe::Environment& env);
/// OPFORGE_PCH_TREE: the build's scratch tree; empty when unset.
std::filesystem::path pch_tree(const probe::Environment& env);
/// OPFORGE_NVCC_ARCH_LOG: the file `opforge __nvcc` appends the project's architecture options to;
/// nullopt when unset or empty.
std::optional<std::filesystem::path> nvcc_arch_log(const probe::Environment& env);
/// NVCC_PREPEND_FLAGS as the nvcc wrapper sees it (it drops the -ccbin of it when a command names
/// its own); nullopt when unset or empty.
std::optional<std::string> nvcc_prepend_flags(const probe::Environment& env);

/// OPFORGE_SCHEDULER_TOKEN: the sccache-dist scheduler's client token; nullopt when unset or empty.
std::optional<std::string> scheduler_token(const probe::Environment& env);

/// TERM names a terminal that draws a progress line: set, not empty, not "dumb".
bool capable_terminal(const probe::Environment& env);

/// OPFORGE_COMPILE_TIMEOUT: whole seconds from 60 to 604800; `fallback` when unset or empty;
/// bad_input naming the variable otherwise.
Result<std::chrono::seconds> compile_timeout(const probe::Environment& env, std::chrono::seconds fallback);

/// OPFORGE_ROOT_SANDBOX: "bwrap" or "chroot"; nullopt when unset or empty; bad_input otherwise.
Result<std::optional<std::string>> root_sandbox(const probe::Environment& env);

/// The variable opforge sets for its own run inside a root (`--root`), naming the root.
inline constexpr std::string_view kInRootVariable = "OPFORGE_IN_ROOT";
/// Whether this opforge runs inside a root for an opforge outside (OPFORGE_IN_ROOT is set).
bool in_root(const probe::Environment& env);
/// The root this opforge runs inside, as the host names it (OPFORGE_IN_ROOT); nullopt outside one.
std::optional<std::filesystem::path> enclosing_root(const probe::Environment& env);

/// The variables DeepSpeed's builders read in is_compatible() (part of the key of its cached
/// answers): the table's rows marked `deepspeed`.
bool read_by_deepspeed_builders(std::string_view name);

/// What a build inside a root gets of `name`: its row's Inside; a variable the table does not name
/// (a project's own switch, FLASH_ATTENTION_FORCE_BUILD) is passed as it is.
Inside inside_root(std::string_view name);

/// The DS_BUILD_<OP> variables that are set, DS_BUILD_OPS among them (DS_BUILD_STRING is
/// DeepSpeed's version suffix, not an op switch, and is left out).
std::map<std::string, std::string> build_switches(const probe::Environment& env);

/// The child an environment is made for (child_environment).
enum class Child {
  opforge,  ///< another opforge (inside a root): everything, its secrets included
  command,  ///< a project's command, ninja, a probe, sccache's server: everything but opforge's secrets
  compile,  ///< a compile that may run on a build server: only the variables the table marks `compile`
};
/// The one builder of a child's environment, driven by the table's Reach column. The only way code
/// outside settings/ and probe/ sees variables it does not ask for by name.
std::map<std::string, std::string> child_environment(const probe::Environment& env, Child who);
/// child_environment(env, Child::command): the whole environment but opforge's secrets, for a child
/// that is handed it as it is (a command build, ninja, a probe).
std::map<std::string, std::string> everything(const probe::Environment& env);
/// The names a compile gets (the rows marked Reach::compile; each an exact name, not a family), in
/// the table's order: what compile::compile_launcher passes on.
std::vector<std::string> compile_variables();
/// The names no child but another opforge gets (Reach::opforge): what probe::keep_from_children
/// is given, for the children that take the machine's environment implicitly.
std::vector<std::string> secret_variables();

}  // namespace opforge::settings
