#pragma once
/// The recipe: a plain value parsed from TOML (recipe/parse.cpp). Environment overrides are not
/// applied here; plan/ applies them so that `plan` can say which value came from where.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "settings/settings.h"
#include "util/error.h"

namespace opforge::recipe {

namespace fs = std::filesystem;

/// `true` | `false` | `"auto"` in [ops].
enum class OpRequest { off, on, automatic };

/// A kind of build ([build] backend): one row each in kKinds. The rest of opforge asks a build's
/// row what it does (project_build) instead of which kind it is; pipeline/kinds.cpp holds each
/// kind's implementation (plan → commands → outputs). Adding a kind is a row here, its folder in
/// compile/, and its entry there (docs/architecture.md, "Kinds of build").
enum class Backend { native, command };
struct BuildKind {
  Backend backend;
  std::string_view name;  ///< as [build] backend spells it
  /// The project's own build runs (its setup.py, CMake, scikit-build-core) and makes the wheel:
  /// opforge reaches its compilers through wrappers and environment channels (CUDACXX, CMAKE_ARGS,
  /// TORCH_CUDA_ARCH_LIST), learns its steps' memory, and checks the wheel's GPU code afterwards.
  /// false: opforge compiles the ops' sources itself (ninja) and packs the wheel.
  bool project_build;
  bool needs_command;     ///< [build] command must name what runs
  std::string_view what;  ///< for messages: "opforge's ninja build of the ops"
};
inline constexpr BuildKind kKinds[] = {
    {Backend::native, "native", false, false, "opforge's own build of the ops (ninja)"},
    {Backend::command, "command", true, true, "the project's own build command ([build] command)"},
};
/// The row of `b`; the name `n` → its kind (nullopt: no such kind).
const BuildKind& build_kind(Backend b);
std::optional<Backend> backend_from_name(std::string_view n);
/// "\"native\" or \"command\"" for messages.
std::string backend_names();
/// The compiler cache in front of a build's compiles: one row each in kCaches (the axis grows:
/// adding one is a row here and its launcher in compile/compiler_cache/compiler_cache).
enum class Cache { none, ccache, sccache };
struct CacheKind {
  Cache cache;
  std::string_view name;     ///< as the recipe, --cache and the messages spell it
  std::string_view program;  ///< the launcher put in front of each compile; empty for none
};
inline constexpr CacheKind kCaches[] = {
    {Cache::none, "none", ""}, {Cache::ccache, "ccache", "ccache"}, {Cache::sccache, "sccache", "sccache"}};
/// The row of `c`; the name `n` → its cache (nullopt: no such cache).
const CacheKind& cache_kind(Cache c);
std::optional<Cache> cache_from_name(std::string_view n);
/// "\"none\", \"ccache\" or \"sccache\"" for messages.
std::string cache_names();

/// The most parallel jobs a build runs ([build] jobs, MAX_JOBS and --jobs are capped or refused
/// above it): more than ninja can usefully run on any machine.
inline constexpr unsigned kMaxJobs = settings::kMaxJobs;

/// `[arch] list = "none"`.
inline constexpr const char* kNoArchList = "none";

struct Recipe {
  fs::path file;  ///< the recipe file as given
  fs::path dir;   ///< its folder, absolute: relative paths in the recipe resolve against it

  struct Package {
    std::string name = "opforge-ops";
    std::string version = "0.1.0";
    std::string local_version = "cu{cuda_major}.g{commit}";  ///< template, a literal, or "none"
    std::string summary = "Prebuilt CUDA/C++ ops built by opforge";
    std::string description;  ///< long description (Markdown) for METADATA; default generated
    std::string requires_python = ">=3.8";
  } package;

  struct Source {
    std::optional<fs::path> path;    ///< absolute after parsing (default: the recipe's folder)
    std::optional<std::string> git;  ///< URL or local path of a git repository
    std::optional<std::string> rev;  ///< tag, branch or commit (with git)
    /// A project's source archive (.tar.gz): an http(s) URL, or a path (absolute after parsing).
    std::optional<std::string> sdist;
    std::optional<std::string> sha256;  ///< the archive's, lower-case hex (with sdist; a URL needs it)
    fs::path ops_dir = "src/kernels";
  } source;

  struct Cuda {
    std::string version = "auto";    ///< "auto" | "torch" | "X.Y" | range ">=12.1,<13"
    std::string python = "python3";  ///< the Python whose torch decides "torch"/"auto"
    /// "none" | "pypi": with version = "torch", a toolkit of torch's exact major.minor is
    /// installed from NVIDIA's PyPI wheels into the cache when none is installed (cuda/provision.h).
    std::string provision = "none";
  } cuda;

  struct Compiler {
    std::string host = "auto";  ///< "auto" | a command or path such as "g++-11"
    bool allow_unsupported = false;
  } compiler;

  struct Arch {
    /// "auto", a TORCH_CUDA_ARCH_LIST-style list, or "none" (kNoArchList): a wheel without GPU code
    /// on purpose (a command build that makes GPU code all the same is refused).
    std::string list = "auto";
    std::string fallback = "8.0;8.6;9.0+PTX";  ///< when auto finds no GPU
    /// Command builds: the -gencode/-arch options a project passes to nvcc are replaced by this
    /// list's (the project's own list is kept, and recorded, when false).
    bool enforce = true;
    /// Command builds: a project's own arch variables, name → form (target::ArchForm::name), each
    /// set to the plan's list in that form: as an environment variable (`env`), or as
    /// `-D<name>=<list>` appended to CMAKE_ARGS (`cmake_define`).
    std::map<std::string, std::string> env;
    std::map<std::string, std::string> cmake_define;
  } arch;

  /// Op name → request, in file order of appearance irrelevant (sorted by name).
  std::map<std::string, OpRequest> ops;

  /// [build] gcc_gc_heap_mib's default, and its largest accepted value.
  static constexpr unsigned kDefaultGccGcHeapMib = 1024;
  static constexpr unsigned kMaxGccGcHeapMib = 65536;

  struct Build {
    Backend backend = Backend::native;
    std::vector<std::string> command;       ///< backend = "command"
    std::string wheel_glob = "dist/*.whl";  ///< where the command's wheel appears (source-relative)
    unsigned jobs = 0;                      ///< 0: auto (all cores); at most kMaxJobs
    Cache cache = Cache::none;
    std::string remote;  ///< ccache remote storage, e.g. "redis://127.0.0.1:6379"
    /// sccache-dist's scheduler ("http://sched:10600"); empty: sccache compiles here (or as the
    /// user's own sccache configuration says).
    std::string scheduler;
    /// A file holding the scheduler's client token (else OPFORGE_SCHEDULER_TOKEN); absolute after parsing.
    fs::path scheduler_token_file;
    fs::path build_dir = "build/opforge";  ///< relative to the recipe's folder
    fs::path dist_dir = "dist";            ///< relative to the recipe's folder
    bool release = false;                  ///< refuse dirty trees and moving revs
    /// The CPU the wheel's code must run on ("x86-64-v3", "skylake-avx512"; target/x86.h lists
    /// them); empty: the project's own -march flags are kept and nothing is checked.
    std::string cpu_target;
    /// The machine the wheel's code is for ("x86_64", "aarch64"; target/platform.h), as the table
    /// spells it whatever alias the recipe wrote; empty: the machine opforge runs on. Another
    /// machine's is a cross-build (plan/cross.cpp).
    std::string platform;
    /// Globs of wheel paths whose code above cpu_target is chosen at run time (not checked).
    std::vector<std::string> cpu_dispatch;
    /// [build.env]: the project's own build switches, set for the build (recorded; `verify` replays
    /// them with the recipe).
    std::map<std::string, std::string> env;
    /// Command builds: torch/extension.h precompiled once per compiler, flags, torch and the
    /// directives a file reads before it, and used by every host compile that reads the same
    /// (compile/pch/pch.h). On by default: a header is made only once three compiles need it, where it
    /// breaks even or gains (DeepSpeed's 18 ops: 5 headers, 4% of the CPU time).
    bool pch = true;
    /// Command builds with gcc: every host compile gets --param=ggc-min-heapsize=<this, in KiB>, so
    /// that gcc collects its garbage once its heap passes this size instead of gcc's default (at
    /// most 128 MiB). A torch extension's compile holds 1.4-2.2 GiB, and gcc otherwise walks it
    /// again and again: 11-22% of each compile's CPU time (bench/host/gcc_gc.sh on DeepSpeed's files, the same
    /// objects). 0: gcc's own default.
    unsigned gcc_gc_heap_mib = kDefaultGccGcHeapMib;
    /// Not from the TOML: the commit a build record names (`build --release-of`, `verify`); the
    /// source must resolve to it, and a branch rev is then accepted.
    std::optional<std::string> release_commit;
  } build;

  /// [wheel]: what the wheel promises about the machines it runs on, and where it is built for
  /// that (recipe/parse.cpp `wheel_keys`: the one place these keys are read).
  struct Wheel {
    /// The glibc floor: the ELF files must keep manylinux_2_<minor>'s policy (0: no floor, the
    /// build only says what the wheel needs). Written "2.28" or "manylinux_2_28".
    int glibc_floor = 0;
    /// Build inside this root filesystem (an older distribution's; absolute after parsing).
    std::optional<fs::path> root;
    /// Requires-Dist on torch from how the wheel's libraries link it (wheel::torch_linkage):
    /// torch==X.Y.* for torch's C++ ABI, torch>=X.Y for its stable C ABI only.
    bool torch_pin = true;
    /// Each wheel also as a variant wheel (wheel/variant.h): variant.json and its label, the
    /// properties read from its binaries; the plain wheel stays beside it as the fallback.
    bool variants = false;
  } wheel;

  /// [matrix]: one build per torch version (× Python interpreter), each in its own environment.
  struct Matrix {
    bool present = false;                   ///< the recipe has a [matrix] table
    std::vector<std::string> torch;         ///< "2.15.0" (exact) or "2.15" (any 2.15.x)
    std::vector<std::string> python;        ///< interpreters on the machine; empty: [cuda] python
    std::vector<std::string> requirements;  ///< installed beside torch in each environment
    /// The machines each cell is built for ("x86_64", "aarch64"; canonical names); empty: the
    /// recipe's [build] platform (or --platform) alone.
    std::vector<std::string> platform;
    /// Arch lists (each in [arch] list's syntax, "8.0", "9.0;10.0+PTX"): each cell is built once per
    /// list as a variant wheel, and once more with their union (plan::fallback_arch_list) as the
    /// plain wheel every other installer gets; empty: no arch axis ([arch] list decides).
    std::vector<std::string> arch;
    /// Cell id → the Python of an existing environment that cell uses instead of making one.
    std::map<std::string, std::string> environments;
    /// A cell whose wheel uses only torch's stable C ABI serves the later cells of its Python whose
    /// torch its requirement admits: they load it instead of building their own.
    bool share_stable_abi = true;
  } matrix;

  /// Where each key was written ("ops.aio", "arch.list", ...), for errors raised after parsing.
  std::map<std::string, Location> locations;
};

/// Whether `r`'s build is the project's own (build_kind(...).project_build): what most of the plan,
/// the CLI and verify ask of a build's kind.
inline bool project_build(const Recipe& r) { return build_kind(r.build.backend).project_build; }

/// Parses and validates a recipe file. Errors carry file:line:col and the offending line.
Result<Recipe> parse_file(const fs::path& path, std::string_view text);

}  // namespace opforge::recipe

namespace opforge::probe {
struct Machine;
}

namespace opforge::recipe {

/// Reads and parses `file` through the machine. Errors name the path as given; `Recipe::dir` and
/// relative [source] paths are absolute (against the file's real folder).
Result<Recipe> load(probe::Machine m, const fs::path& file);

/// Syntax of a TORCH_CUDA_ARCH_LIST-style list (target::parse_arch_list); the error's
/// where.column is the column inside `text`.
Status check_arch_list(std::string_view text);

}  // namespace opforge::recipe
