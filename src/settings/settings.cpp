#include "settings/settings.h"

#include <algorithm>

#include "util/numbers.h"
#include "util/strings.h"

namespace opforge::settings {
namespace {

constexpr Source env = Source::environment;
constexpr Source key = Source::recipe;

// One row a setting. A family ("DS_BUILD_*") covers every name with that prefix.
constexpr Setting kTable[] = {
    // The environment: DeepSpeed's and PyTorch's meanings, overriding the recipe.
    {env, "DS_BUILD_OPS", "integer; empty = unset (DeepSpeed's setup.py)", "0 when another DS_BUILD_* is set", true,
     "settings::build_switches (ops/decide.cpp: the op set)", Inside::passed, true},
    {env, "DS_BUILD_*", "DS_BUILD_<OP>: integer (0/1); empty = unset; naming no op is exit 2",
     "unset: the recipe's [ops]", true, "settings::build_switches (ops/decide.cpp: the op set)", Inside::passed, true},
    {env, "DS_SKIP_CUDA_CHECK", "exactly `1` skips (DeepSpeed's rule); any other value does not",
     "unset: a torch/toolkit CUDA mismatch is an error", true,
     "settings::skip_cuda_check (plan/overrides.cpp, cuda/resolve.cpp)", Inside::passed, true},
    {env, "DS_*", "any other DS_ variable: passed to a command build as it is", "unset", true,
     "DeepSpeed's setup.py and builders (a command build)", Inside::passed, true},
    {env, "TORCH_CUDA_ARCH_LIST", "an arch list as [arch] list (`8.6;9.0+PTX`); bad: exit 2",
     "the recipe's [arch] list", true, "settings::arch_list (plan/overrides.cpp: overrides [arch] list)",
     Inside::passed, true},
    {env, "TORCH_*", "any other TORCH_ variable: PyTorch's own (TORCH_EXTENSIONS_DIR, ...), passed as it is", "unset",
     false, "PyTorch's cpp_extension (a command build)", Inside::passed, true},
    {env, "CUDA_HOME", "the toolkit's root: used, or exit 2 (not a toolkit) / exit 3 (not `[cuda] version`)",
     "the toolkit search", true,
     "settings::toolkit_roots (cuda/discover.cpp, cuda/resolve.cpp, plan/overrides.cpp, root/invoke.cpp)",
     Inside::passed, true},
    {env, "CUDA_PATH", "as CUDA_HOME, when CUDA_HOME is unset", "the toolkit search", true,
     "settings::toolkit_roots (cuda/discover.cpp, cuda/resolve.cpp, plan/overrides.cpp, root/invoke.cpp)",
     Inside::passed, true},
    {env, "CUDA_VISIBLE_DEVICES", "the GPUs nvidia-smi's list is cut to (indices or UUIDs)", "every GPU", false,
     "settings::visible_devices (devices/resolve.cpp)", Inside::passed, true},
    {env, "CUDA_*", "any other CUDA_ variable: the driver's and the toolkit's own, passed as it is", "unset", false,
     "the CUDA driver and toolkit", Inside::passed, true},
    {env, "CUTLASS_*", "CUTLASS_PATH: DeepSpeed's evoformer_attn builder", "unset", false,
     "DeepSpeed's builders (a command build)", Inside::passed, true},
    {env, "SOURCE_DATE_EPOCH", "seconds since 1970, >= 0; clamped up to 315532800 (1980-01-01, the oldest zip time)",
     "the source commit's time, else 1980-01-01", true,
     "settings::source_date_epoch (plan/overrides.cpp: the wheel's timestamps)", Inside::passed, false, Reach::compile},
    {env, "MAX_JOBS", "a positive integer (`-j N` beats it); above 4096 capped at 4096 with a note", "[build] jobs",
     true, "settings::max_jobs (plan/overrides.cpp: jobs)", Inside::passed},
    {env, "CFLAGS", "compiler flags, split on spaces for the probes; a command build gets them after Python's", "unset",
     true, "settings::user_compiler_flags (ops/decide.cpp: probes); a command build", Inside::passed, true},
    {env, "CXXFLAGS", "as CFLAGS", "unset", true,
     "settings::user_compiler_flags (ops/decide.cpp: probes); a command build", Inside::passed, true},
    {env, "LDFLAGS", "linker flags, as CFLAGS", "unset", true,
     "settings::user_compiler_flags (ops/decide.cpp: probes); a command build", Inside::passed, true},
    {env, "NVCC_APPEND_FLAGS", "nvcc's own: flags after every nvcc command line (opforge adds its own after them)",
     "unset", true, "nvcc", Inside::passed, true, Reach::compile},
    {env, "NVCC_PREPEND_FLAGS", "nvcc's own: flags before every nvcc command line (opforge adds -ccbin when unset)",
     "unset", true,
     "nvcc; compile/wrap/environment.cpp adds -ccbin; settings::nvcc_prepend_flags (compile/wrap/wrap_command.cpp) "
     "drops it from a command that names its own",
     Inside::passed, true, Reach::compile},
    {env, "CC", "and CXX: the C and C++ compilers a setup.py uses", "the recipe's host compiler", false,
     "setuptools and DeepSpeed's builders (a command build)", Inside::passed, true},
    {env, "CXX", "as CC", "the recipe's host compiler", false, "setuptools and DeepSpeed's builders (a command build)",
     Inside::passed, true},
    // CMake's own, for a project that runs CMake (compile/wrap/environment.cpp, set_cmake).
    {env, "CUDACXX",
     "set by opforge for a command build with a toolkit: CMake's CUDA compiler at the first configure, the nvcc "
     "wrapper (the toolkit's nvcc without one); the caller's own gives way, with a note in the plan",
     "unset", false, "settings::cuda_compiler (plan/exports.cpp: the note); CMake (a command build)", Inside::set},
    {env, "CUDAHOSTCXX", "set by opforge for a command build with a toolkit: CMake's CMAKE_CUDA_HOST_COMPILER, CXX",
     "unset", false, "CMake (a command build)", Inside::set},
    {env, "CUDAToolkit_ROOT", "set by opforge for a command build with a toolkit: the toolkit's root, for CMake",
     "unset", false, "CMake's FindCUDAToolkit (a command build)", Inside::set},
    {env, "CUDAARCHS",
     "set by opforge for a command build with a toolkit: CMAKE_CUDA_ARCHITECTURES' default, the arch list in "
     "CMake's spelling (`9.0+PTX`: `90-real;90-virtual`)",
     "unset", false, "CMake (a command build)", Inside::set},
    {env, "CMAKE_ARGS",
     "CMake arguments: a command build with a toolkit and [arch] enforce gets "
     "`-DCMAKE_CUDA_ARCHITECTURES=<CUDAARCHS>` after the caller's own, then [arch] cmake_define's",
     "unset", true, "scikit-build-core and setup.py CMake drivers (a command build)", Inside::passed},
    {env, "SKBUILD_*",
     "scikit-build-core's own settings (SKBUILD_CMAKE_DEFINE, SKBUILD_CMAKE_ARGS, ...), passed as they are", "unset",
     true, "scikit-build-core (a command build)", Inside::passed},
    {env, "SKBUILD_BUILD_DIR",
     "set by opforge for a command build when unset: `<tree>/build/skbuild`, a folder inside the scratch tree "
     "instead of a temporary one whose path the objects would hold",
     "unset", false, "scikit-build-core (a command build)", Inside::set},
    {env, "CMAKE_BUILD_PARALLEL_LEVEL", "set by opforge for a command build: the plan's jobs, for `cmake --build`",
     "unset", false, "CMake (a command build)", Inside::set},
    {env, "CMAKE_C_COMPILER_LAUNCHER",
     "and CMAKE_CXX_COMPILER_LAUNCHER, CMAKE_CUDA_COMPILER_LAUNCHER: set by opforge to `ccache` for a command build "
     "with [build] cache = \"ccache\"",
     "unset", false, "CMake (a command build)", Inside::set},
    {env, "CMAKE_CXX_COMPILER_LAUNCHER", "as CMAKE_C_COMPILER_LAUNCHER", "unset", false, "CMake (a command build)",
     Inside::set},
    {env, "CMAKE_CUDA_COMPILER_LAUNCHER", "as CMAKE_C_COMPILER_LAUNCHER", "unset", false, "CMake (a command build)",
     Inside::set},
    {env, "LIBRARY_PATH", "and CPATH: the compilers' own search folders", "unset", false,
     "gcc; DeepSpeed's builders (async_io's libaio probe)", Inside::passed, true, Reach::compile},
    {env, "CPATH", "as LIBRARY_PATH", "unset", false, "gcc; DeepSpeed's builders", Inside::passed, true,
     Reach::compile},
    {env, "C_INCLUDE_PATH", "and CPLUS_INCLUDE_PATH: gcc's own include folders", "unset", false, "gcc", Inside::passed,
     false, Reach::compile},
    {env, "CPLUS_INCLUDE_PATH", "as C_INCLUDE_PATH", "unset", false, "gcc", Inside::passed, false, Reach::compile},
    {env, "CCACHE_*", "ccache's own settings", "unset", false, "ccache ([build] cache = \"ccache\")", Inside::passed},
    {env, "SCCACHE_*",
     "sccache's own settings, for its client server (SCCACHE_CONF: your sccache configuration, used as it is "
     "when the recipe names no scheduler)",
     "unset", false, "sccache ([build] cache = \"sccache\")", Inside::passed},
    {env, "SCCACHE_SERVER_UDS",
     "set by opforge: the socket of each build's own sccache client server, which a compile's sccache talks to",
     "unset", false, "sccache ([build] cache = \"sccache\")", Inside::host, false, Reach::compile},
    {env, "OPFORGE_SCHEDULER_TOKEN",
     "the sccache-dist scheduler's client token ([build] scheduler); never printed "
     "or recorded",
     "[build] scheduler_token_file", false, "settings::scheduler_token (compile/compiler_cache/sccache.cpp)",
     Inside::passed, false, Reach::opforge},
    {env, "CONDA_PREFIX", "a conda environment that may hold a toolkit", "unset", false,
     "settings::conda_prefix (cuda/discover.cpp)", Inside::host},
    {env, "PATH", "where tools (nvcc, compilers, ninja, ccache, python3) are looked up; every child's", "inherited",
     false, "settings::path (cuda/, compiler/, ops/, plan/, root/, doctor/); probe/ (every child)", Inside::set, true,
     Reach::compile},
    {env, "LD_LIBRARY_PATH", "the loader's folders: the chosen toolkit's lib folder is put first for a build", "unset",
     false, "settings::library_path (cuda/resolve.cpp)", Inside::host, true, Reach::compile},
    {env, "LD_*", "any other LD_ variable (LD_PRELOAD, ...): the host's loader", "unset", false, "the loader",
     Inside::host},
    {env, "OPFORGE_CACHE_DIR", "an absolute folder", "`$XDG_CACHE_HOME/opforge`, else `~/.cache/opforge`", false,
     "settings::cache_dir (every cache reader); probe/paths.cpp holds the rule for probe/'s own caches", Inside::set},
    {env, "XDG_CACHE_HOME", "absolute; a relative value is ignored", "`$HOME/.cache`", false,
     "settings::cache_dir; probe/paths.cpp", Inside::set},
    {env, "XDG_*", "any other XDG_ variable: the host's session", "unset", false, "none", Inside::host},
    {env, "HOME", "absolute; a relative value is ignored (no cache rather than one in the working folder)", "unset",
     false, "settings::cache_dir; probe/paths.cpp; settings::pyenv_version_file", Inside::set},
    {env, "PYENV_ROOT", "pyenv's root (its `version` file decides a shim's Python)", "`$HOME/.pyenv`", false,
     "settings::pyenv_version_file (cuda/torch.cpp: the remembered torch location)", Inside::host},
    {env, "PYTHONPATH",
     "and PYTHONHOME, PYTHONNOUSERSITE, PYTHONSAFEPATH, PYTHONUSERBASE, PYTHONPLATLIBDIR, PYENV_VERSION, "
     "VIRTUAL_ENV: what the Python's import path depends on",
     "unset", false, "settings::python_variables (cuda/torch.cpp: the remembered torch location)", Inside::host, true},
    {env, "PYTHON*", "any other PYTHON variable (PYTHONHOME, PYTHONUSERBASE, ...): as PYTHONPATH", "unset", false,
     "settings::python_variables (cuda/torch.cpp)", Inside::host},
    {env, "PYENV_VERSION", "as PYTHONPATH", "unset", false, "settings::python_variables (cuda/torch.cpp)",
     Inside::host},
    {env, "VIRTUAL_ENV", "as PYTHONPATH", "unset", false, "settings::python_variables (cuda/torch.cpp)", Inside::host},
    {env, "TERM", "a terminal that draws a progress line: set, not empty, not `dumb`", "no progress line", false,
     "settings::capable_terminal (cli/progress.cpp, compile/native/native.cpp: ninja gets vt100 otherwise)",
     Inside::passed},
    {env, "NO_COLOR", "no colour (opforge prints none; passed to the tools it runs)", "unset", false,
     "the tools opforge runs", Inside::passed},
    {env, "LANG", "and LC_*: the locale", "inherited; `C.UTF-8` inside a root", false, "the tools opforge runs",
     Inside::set, false, Reach::compile},
    {env, "LC_ALL", "as LANG (the compilers' messages and input charset)", "inherited; unset inside a root", false,
     "the tools opforge runs", Inside::host, false, Reach::compile},
    {env, "LC_CTYPE", "as LC_ALL", "inherited; unset inside a root", false, "the tools opforge runs", Inside::host,
     false, Reach::compile},
    {env, "LC_MESSAGES", "as LC_ALL", "inherited; unset inside a root", false, "the tools opforge runs", Inside::host,
     false, Reach::compile},
    {env, "LC_*", "as LANG", "inherited; unset inside a root", false, "the tools opforge runs", Inside::host},
    {env, "TMPDIR", "where temporary folders are made", "/tmp", false, "probe/real_machine.cpp", Inside::host, false,
     Reach::compile},
    {env, "SHELL", "and PWD, OLDPWD, SHLVL, `_`, DISPLAY, SSH_*, DBUS_*: the host's session", "inherited", false,
     "none", Inside::host},
    {env, "PWD", "the host's session", "inherited", false, "none", Inside::host},
    {env, "OLDPWD", "the host's session", "inherited", false, "none", Inside::host},
    {env, "SHLVL", "the host's session", "inherited", false, "none", Inside::host},
    {env, "_", "the host's session", "inherited", false, "none", Inside::host},
    {env, "DISPLAY", "the host's session", "unset", false, "none", Inside::host},
    {env, "SSH_*", "the host's session", "unset", false, "none", Inside::host},
    {env, "DBUS_*", "the host's session", "unset", false, "none", Inside::host},
    {env, "OPFORGE_COMPILE_TIMEOUT",
     "whole seconds, 60 to 604800, the limit of each compile command (the ninja run, [build] command, each op's "
     "step); else exit 2",
     "21600 (6 hours)", false, "settings::compile_timeout (plan/make.cpp)", Inside::passed},
    {env, "OPFORGE_ROOT_SANDBOX", "how `--root` enters the root: `bwrap` or `chroot`; else exit 2",
     "bubblewrap when installed, else unshare + chroot (needs root)", false, "settings::root_sandbox (root/root.cpp)",
     Inside::host},
    {env, "OPFORGE_IN_ROOT", "set by opforge for its own run inside a root: that run enters no root again", "unset",
     false, "settings::in_root (cli/build.cpp, cli/plan.cpp); settings::enclosing_root (pipeline/record_inputs.cpp)",
     Inside::set},
    {env, "OPFORGE_PCH_LOG",
     "set by opforge for a command build with [build] pch: the file its host compiles log what they did with the "
     "precompiled torch header into",
     "unset", false, "settings::pch_log (compile/pch/host_compile.cpp)", Inside::set},
    {env, "OPFORGE_NVCC_ARCH_LOG",
     "set by opforge for a command build: the file its nvcc wrapper (`opforge __nvcc`) appends the project's "
     "architecture options to, a line per nvcc command",
     "unset", false, "settings::nvcc_arch_log (compile/wrap/wrap_command.cpp)", Inside::set},
    {env, "OPFORGE_PCH_TREE",
     "set by opforge for a command build with [build] pch: the scratch tree, whose include folders are the "
     "project's own",
     "unset", false, "settings::pch_tree (compile/pch/host_compile.cpp)", Inside::set},
    {env, "OPFORGE_TEST_STOP_AT", "tests only: a point where opforge kills itself (records-and-wheels.md)", "unset",
     false, "probe/real_machine.cpp", Inside::passed},
    {env, "OPFORGE_TEST_PAUSE_AT", "tests only: a point where opforge stops itself", "unset", false,
     "probe/real_machine.cpp", Inside::passed},

    // The recipe (docs/recipe.md, one section a table; the recipe's hash is in the record).
    {key, "package.name", "string: letters, digits, `.`, `_`, `-`", "\"opforge-ops\"", true, "recipe/parse.cpp"},
    {key, "package.version", "PEP 440 public version", "\"0.1.0\"", true, "recipe/parse.cpp"},
    {key, "package.local_version", "template of the local label", "\"cu{cuda_major}.g{commit}\"", true,
     "plan/version.cpp"},
    {key, "package.summary", "string", "generated", true, "wheel/metadata.cpp"},
    {key, "package.description", "string", "generated", true, "wheel/metadata.cpp"},
    {key, "package.requires_python", "string", "\">=3.8\"", true, "wheel/metadata.cpp"},
    {key, "source.path", "folder", "the recipe's folder", true, "plan/source_stage.cpp"},
    {key, "source.git", "git URL", "unset", true, "plan/source_stage.cpp"},
    {key, "source.rev", "tag, branch or commit", "HEAD", true, "plan/source_stage.cpp"},
    {key, "source.sdist", "a source archive's path or http(s) URL", "unset", true, "plan/source_stage.cpp"},
    {key, "source.sha256", "64 hex digits", "unset", true, "plan/source_stage.cpp"},
    {key, "source.ops_dir", "folder inside the tree", "\"src/kernels\"", true, "plan/catalogue.cpp"},
    {key, "cuda.version", "\"auto\", \"torch\", a version or a range", "\"auto\"", true, "cuda/resolve.cpp"},
    {key, "cuda.python", "interpreter", "\"python3\"", true, "cuda/torch.cpp"},
    {key, "cuda.provision", "\"none\" or \"pypi\"", "\"none\"", true, "plan/provision_stage.cpp"},
    {key, "compiler.host", "\"auto\" or a command/path", "\"auto\"", true, "compiler/resolve.cpp"},
    {key, "compiler.allow_unsupported", "bool", "false", true, "compiler/host.cpp"},
    {key, "arch.list", "\"auto\", an arch list (string or array), or \"none\"", "\"auto\"", true,
     "devices/resolve.cpp"},
    {key, "arch.fallback", "an arch list", "\"8.0;8.6;9.0+PTX\"", true, "devices/resolve.cpp"},
    {key, "arch.enforce", "bool", "true", true, "compile/wrap/wrappers.cpp"},
    {key, "arch.env",
     "table: a project's environment variable → the arch list's form (`torch`, `cmake`, `numbers`, `dotted`; "
     "command builds)",
     "{}", true, "compile/wrap/environment.cpp"},
    {key, "arch.cmake_define", "table: a project's CMake variable → the form; `-D<name>=<list>` in CMAKE_ARGS", "{}",
     true, "compile/wrap/environment.cpp"},
    {key, "ops.<op>", "true, false or \"auto\"", "\"auto\"", true, "ops/decide.cpp"},
    {key, "build.backend", "\"native\" or \"command\"", "\"native\"", true, "plan/make.cpp"},
    {key, "build.command", "array of strings", "unset", true, "compile/command/command_backend.cpp"},
    {key, "build.wheel_glob", "glob", "\"dist/*.whl\"", false, "compile/command/wheel_match.cpp"},
    {key, "build.jobs", "integer >= 1 or \"auto\"; above 4096 capped", "\"auto\"", false, "plan/overrides.cpp"},
    {key, "build.cache", "\"none\", \"ccache\" or \"sccache\"", "\"none\"", false,
     "compile/compiler_cache/compiler_cache.cpp"},
    {key, "build.remote", "ccache remote storage URL", "unset", false, "compile/compiler_cache/compiler_cache.cpp"},
    {key, "build.scheduler", "an sccache-dist scheduler's URL (cache = \"sccache\")", "unset: compile here", false,
     "compile/compiler_cache/sccache.cpp"},
    {key, "build.scheduler_token_file", "a file holding the scheduler's client token", "OPFORGE_SCHEDULER_TOKEN", false,
     "compile/compiler_cache/sccache.cpp"},
    {key, "build.build_dir", "folder", "\"build/opforge\"", false, "plan/make.cpp"},
    {key, "build.dist_dir", "folder", "\"dist\"", false, "plan/make.cpp"},
    {key, "build.release", "bool", "false", false, "plan/source_stage.cpp"},
    {key, "build.pch", "bool: precompiled torch headers for a command build's host compiles", "true", false,
     "compile/pch/host_compile.cpp"},
    {key, "build.gcc_gc_heap_mib",
     "integer 0-65536: the heap (MiB) a command build's gcc host compiles grow to before they collect", "1024", false,
     "compile/wrap/wrappers.cpp"},
    {key, "build.platform", "\"x86_64\" or \"aarch64\" (also \"amd64\", \"arm64\")", "unset: this machine's", true,
     "plan/cross.cpp"},
    {key, "build.cpu_target", "a CPU target name", "unset", true, "compiler/cpu_target.cpp"},
    {key, "build.cpu_dispatch", "array of wheel path globs", "[]", false, "pipeline/cpu_target_check.cpp"},
    {key, "build.env", "table: variable → string (command builds)", "{}", true, "compile/wrap/environment.cpp"},
    {key, "wheel.glibc", "a glibc floor (\"2.28\") or a manylinux platform (\"manylinux_2_28\")", "unset: none", true,
     "wheel/platform.cpp"},
    {key, "wheel.root", "a root filesystem's folder", "unset: the host", true, "root/root.cpp"},
    {key, "wheel.torch_pin", "bool: Requires-Dist on torch from how the wheel's libraries link it", "true", true,
     "compile/command/command_backend.cpp"},
    {key, "wheel.variants",
     "bool: each wheel also as a variant wheel (PEP 825 draft: variant.json, the label in its name) and the index's "
     "variants.json, the properties read from the binaries",
     "false", false, "pipeline/variants.cpp"},
    {key, "matrix.torch", "array of torch releases", "unset", true, "plan/matrix.cpp"},
    {key, "matrix.python", "array of interpreters", "[cuda] python", true, "plan/matrix.cpp"},
    {key, "matrix.requirements", "array of pip requirements", "[]", true, "plan/matrix.cpp"},
    {key, "matrix.environments", "table: cell id → Python", "{}", true, "plan/matrix.cpp"},
    {key, "matrix.platform", "array of platforms: each cell also for each machine", "[build] platform", true,
     "plan/matrix.cpp"},
    {key, "matrix.arch",
     "array of arch lists: each cell also once per list as a variant wheel, the plain wheel for their union",
     "unset: [arch] list", true, "plan/matrix.cpp"},
    {key, "matrix.share_stable_abi", "bool: a stable-ABI cell's wheel serves the later cells", "true", true,
     "pipeline/matrix.cpp"},
};

bool matches(const Setting& s, std::string_view name) {
  if (s.name.ends_with("*")) return name.starts_with(s.name.substr(0, s.name.size() - 1));
  return s.name == name;
}

auto bad_variable(std::string_view name, std::string_view value, const std::string& what, const std::string& hint) {
  return bad_input("environment variable " + std::string(name) + "='" + strings::cut(std::string(value)) + "' " + what,
                   hint);
}

}  // namespace

std::span<const Setting> table() { return kTable; }

std::vector<std::string> recipe_keys(std::string_view section) {
  std::vector<std::string> out;
  for (const auto& s : kTable) {
    if (s.source != Source::recipe || !s.name.starts_with(section) || s.name.size() <= section.size() ||
        s.name[section.size()] != '.')
      continue;
    out.emplace_back(s.name.substr(section.size() + 1));
  }
  return out;
}

const Setting* find_variable(std::string_view name) {
  // The most specific row first: DS_BUILD_OPS before DS_BUILD_* before DS_*.
  const Setting* best = nullptr;
  for (const auto& s : kTable)
    if (s.source == Source::environment && matches(s, name) && (!best || s.name.size() > best->name.size())) best = &s;
  return best;
}

bool changes_wheel(std::string_view name) {
  const Setting* s = find_variable(name);
  return s && s->changes_wheel;
}

std::string wheel_variables_line() {
  std::vector<std::string> names;
  for (const auto& s : kTable) {
    if (s.source != Source::environment || !s.changes_wheel) continue;
    // A family covers its members: DS_* says DS_BUILD_OPS too.
    const bool covered = std::any_of(std::begin(kTable), std::end(kTable), [&](const Setting& other) {
      return &other != &s && other.source == Source::environment && other.changes_wheel && other.name.ends_with("*") &&
             matches(other, s.name);
    });
    if (!covered) names.emplace_back(s.name);
  }
  return strings::join(names, ", ");
}

std::string markdown_variables() {
  std::string out =
      "| variable | read as | unset | changes the wheel | inside a root | children | read by |\n"
      "|---|---|---|---|---|---|---|\n";
  for (const auto& s : kTable) {
    if (s.source != Source::environment) continue;
    out += "| `" + std::string(s.name) + "` | " + std::string(s.rule) + " | " + std::string(s.fallback) + " | " +
           (s.changes_wheel ? "yes: recorded, replayed by `verify`" : "no") + " | " +
           std::string(inside_name(s.inside)) + " | " + std::string(reach_name(s.reach)) + " | " +
           std::string(s.readers) + " |\n";
  }
  return out;
}

Result<unsigned> parse_jobs_flag(std::string_view text) {
  auto n = numbers::parse_int<long long>(strings::trim(text));
  if (!n || *n < 1 || *n > kMaxJobs)
    return bad_input(
        "'" + strings::cut(std::string(text)) + "' is not a number of jobs from 1 to " + std::to_string(kMaxJobs),
        "use e.g. -j 8, or leave -j out (MAX_JOBS, the recipe, then what the machine holds)");
  return static_cast<unsigned>(*n);
}

bool skip_cuda_check(const probe::Environment& env) {
  return env.get("DS_SKIP_CUDA_CHECK") == std::optional<std::string>("1");
}

std::optional<std::string> ignored_skip_cuda_check(const probe::Environment& env) {
  auto v = env.get("DS_SKIP_CUDA_CHECK");
  if (!v || v->empty() || *v == "0" || *v == "1") return std::nullopt;
  return v;
}

Result<std::optional<ArchList>> arch_list(const probe::Environment& env) {
  auto v = env.get("TORCH_CUDA_ARCH_LIST");
  if (!v || strings::trim(*v).empty()) return std::nullopt;
  auto parsed = target::check_arch_list(*v);
  if (!parsed)
    // The value is cut, the reason is not: a 100 KB list must still say what is wrong with it.
    return bad_variable("TORCH_CUDA_ARCH_LIST", *v, "is invalid: " + strings::cut(parsed.error().message, 1000),
                        "use entries like 8.6 or 9.0+PTX separated by ';' (or unset it)");
  return ArchList{*v, std::move(*parsed)};
}

Result<std::optional<Jobs>> max_jobs(const probe::Environment& env) {
  auto v = env.get("MAX_JOBS");
  if (!v || v->empty()) return std::nullopt;
  auto n = numbers::parse_int<long long>(strings::trim(*v));
  if (!n && n.error() == numbers::IntError::out_of_range)
    return bad_variable("MAX_JOBS", *v, "is too large", "use e.g. MAX_JOBS=8, or unset it");
  if (!n || *n < 1)
    return bad_variable("MAX_JOBS", *v, "is not a positive integer", "use e.g. MAX_JOBS=8, or unset it");
  // More jobs than ninja can usefully run are not an error: they are capped.
  const long long cap = kMaxJobs;
  return Jobs{static_cast<unsigned>(std::min(*n, cap)), *n > cap, *n};
}

Result<std::optional<std::int64_t>> source_date_epoch(const probe::Environment& env) {
  auto v = env.get("SOURCE_DATE_EPOCH");
  if (!v || v->empty()) return std::nullopt;
  auto n = numbers::parse_int<std::int64_t>(strings::trim(*v));
  if (!n || *n < 0)
    return bad_variable("SOURCE_DATE_EPOCH", *v, "is not a non-negative integer (seconds since 1970)",
                        "use e.g. SOURCE_DATE_EPOCH=$(git log -1 --format=%ct), or unset it");
  return *n;
}

std::vector<std::pair<std::string, std::string>> toolkit_roots(const probe::Environment& env) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto name : kToolkitVariables)
    if (auto v = env.get(std::string(name)); v && !v->empty()) out.emplace_back(name, *v);
  return out;
}

std::filesystem::path cache_dir(const probe::Environment& env) { return probe::default_cache_dir(env); }

std::string path(const probe::Environment& env) { return env.get("PATH").value_or(""); }

std::optional<std::string> library_path(const probe::Environment& env) { return env.get("LD_LIBRARY_PATH"); }

std::optional<std::string> cuda_compiler(const probe::Environment& env) {
  auto v = env.get("CUDACXX");
  if (!v || v->empty()) return std::nullopt;
  return v;
}

std::optional<std::string> conda_prefix(const probe::Environment& env) {
  auto v = env.get("CONDA_PREFIX");
  if (!v || v->empty()) return std::nullopt;
  return v;
}

std::filesystem::path pyenv_version_file(const probe::Environment& env) {
  if (auto root = env.get("PYENV_ROOT"); root && !root->empty()) return std::filesystem::path(*root) / "version";
  if (auto home = env.get("HOME"); home && !home->empty()) return std::filesystem::path(*home) / ".pyenv" / "version";
  return {};
}

std::vector<std::pair<std::string, std::optional<std::string>>> python_variables(const probe::Environment& env) {
  std::vector<std::pair<std::string, std::optional<std::string>>> out;
  for (const char* name : {"PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONSAFEPATH", "PYTHONUSERBASE",
                           "PYTHONPLATLIBDIR", "PYENV_VERSION", "PYENV_ROOT", "VIRTUAL_ENV", "CONDA_PREFIX", "HOME"})
    out.emplace_back(name, env.get(name));
  return out;
}

std::optional<std::string> visible_devices(const probe::Environment& env) { return env.get("CUDA_VISIBLE_DEVICES"); }

std::optional<std::filesystem::path> pch_log(const probe::Environment& env) {
  auto v = env.get("OPFORGE_PCH_LOG");
  if (!v || v->empty()) return std::nullopt;
  return std::filesystem::path(*v);
}

std::optional<std::filesystem::path> nvcc_arch_log(const probe::Environment& env) {
  auto v = env.get("OPFORGE_NVCC_ARCH_LOG");
  if (!v || v->empty()) return std::nullopt;
  return std::filesystem::path(*v);
}

std::optional<std::string> nvcc_prepend_flags(const probe::Environment& env) {
  auto v = env.get("NVCC_PREPEND_FLAGS");
  if (!v || v->empty()) return std::nullopt;
  return v;
}

std::filesystem::path pch_tree(const probe::Environment& env) {
  auto v = env.get("OPFORGE_PCH_TREE");
  return v ? std::filesystem::path(*v) : std::filesystem::path();
}

std::optional<std::string> scheduler_token(const probe::Environment& env) {
  auto v = env.get("OPFORGE_SCHEDULER_TOKEN");
  if (!v || v->empty()) return std::nullopt;
  return v;
}

bool capable_terminal(const probe::Environment& env) {
  auto term = env.get("TERM");
  return term && !term->empty() && *term != "dumb";
}

Result<std::chrono::seconds> compile_timeout(const probe::Environment& env, std::chrono::seconds fallback) {
  auto v = env.get("OPFORGE_COMPILE_TIMEOUT");
  if (!v || v->empty()) return fallback;
  auto n = numbers::parse_int<std::int64_t>(strings::trim(*v));
  if (!n || *n < 60 || *n > 604800)
    return bad_input("environment variable OPFORGE_COMPILE_TIMEOUT='" + strings::cut(*v) +
                         "' is not a number of seconds from 60 to 604800 (a week)",
                     "use e.g. OPFORGE_COMPILE_TIMEOUT=21600 (6 hours, the default), or unset it");
  return std::chrono::seconds(*n);
}

Result<std::optional<std::string>> root_sandbox(const probe::Environment& env) {
  auto v = env.get("OPFORGE_ROOT_SANDBOX");
  if (!v || v->empty()) return std::nullopt;
  if (*v != "bwrap" && *v != "chroot")
    return bad_input("OPFORGE_ROOT_SANDBOX=" + strings::cut(*v, 40) + ": expected bwrap or chroot",
                     "set it to bwrap or chroot, or unset it (bubblewrap when installed, else unshare and chroot)");
  return v;
}

bool in_root(const probe::Environment& env) { return env.get(std::string(kInRootVariable)).has_value(); }

std::optional<std::filesystem::path> enclosing_root(const probe::Environment& env) {
  auto v = env.get(std::string(kInRootVariable));
  if (!v || v->empty()) return std::nullopt;
  return std::filesystem::path(*v);
}

std::vector<std::string> user_compiler_flags(const probe::Environment& env) {
  std::vector<std::string> out;
  for (const char* var : {"CFLAGS", "CXXFLAGS", "LDFLAGS"})
    if (auto v = env.get(var))
      for (auto& w : strings::split(*v, ' '))
        if (!strings::trim(w).empty()) out.emplace_back(strings::trim(w));
  return out;
}

bool read_by_deepspeed_builders(std::string_view name) {
  const Setting* s = find_variable(name);
  return s && s->deepspeed;
}

Inside inside_root(std::string_view name) {
  const Setting* s = find_variable(name);
  return s ? s->inside : Inside::passed;
}

std::string_view inside_name(Inside i) {
  switch (i) {
    case Inside::passed: return "passed";
    case Inside::set: return "set by opforge";
    case Inside::host: return "not passed (the host's)";
  }
  return "";
}

std::map<std::string, std::string> build_switches(const probe::Environment& env) {
  std::map<std::string, std::string> out;
  for (auto& [name, value] : env.all())
    if (name.starts_with("DS_BUILD_") && name != "DS_BUILD_STRING") out.emplace(name, value);
  return out;
}

std::string_view reach_name(Reach r) {
  switch (r) {
    case Reach::child: return "every child but a compile";
    case Reach::compile: return "every child, a compile too";
    case Reach::opforge: return "none (opforge's own)";
  }
  return "";
}

std::map<std::string, std::string> child_environment(const probe::Environment& env, Child who) {
  auto out = env.all();
  const auto reach = [](const std::string& name) {
    const Setting* s = find_variable(name);
    return s ? s->reach : Reach::child;
  };
  if (who == Child::command) std::erase_if(out, [&](auto& kv) { return reach(kv.first) == Reach::opforge; });
  // A compile's list is the table's, never the machine's: what it does not name stays here.
  if (who == Child::compile) std::erase_if(out, [&](auto& kv) { return reach(kv.first) != Reach::compile; });
  return out;
}

std::map<std::string, std::string> everything(const probe::Environment& env) {
  return child_environment(env, Child::command);
}

std::vector<std::string> compile_variables() {
  std::vector<std::string> out;
  for (const auto& s : kTable)
    if (s.source == Source::environment && s.reach == Reach::compile) out.emplace_back(s.name);
  return out;
}

std::vector<std::string> secret_variables() {
  std::vector<std::string> out;
  for (const auto& s : kTable)
    if (s.source == Source::environment && s.reach == Reach::opforge) out.emplace_back(s.name);
  return out;
}

}  // namespace opforge::settings
