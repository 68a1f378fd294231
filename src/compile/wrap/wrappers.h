#pragma once
/// The scripts a command build compiles through: nvcc without -lineinfo, and host compilers that
/// add -g0 to every compile.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// plan.h uses `fs` unqualified; give it the alias it expects.
namespace opforge {}

#include "compile/wrap/host_args.h"
#include "compile/wrap/nvcc_args.h"
#include "plan/plan.h"
#include "probe/machine.h"
#include "settings/child_env.h"
#include "util/error.h"

namespace opforge::compile {

struct HostWrappers;

/// The nvcc a command build's torch extensions compile with (torch's ninja builds run
/// $PYTORCH_NVCC): a script that runs the toolkit's `nvcc` without `-lineinfo` /
/// `--generate-line-info`. The line table those add records each source and header file's
/// modification time (DWARF file entries), and the scratch tree's files and a pip-installed torch's
/// headers get theirs when they are written: DeepSpeed's fused_adam (built with -lineinfo) would
/// otherwise differ from one build to the next in a few bytes of its .nv_fatbin.
///
/// The script also takes every GPU architecture option (-gencode, --generate-code, -arch,
/// --gpu-architecture, -code, --gpu-code, joined with '=' or not) off the command line, writes them
/// to $OPFORGE_NVCC_ARCH_LOG when that is set (one line per nvcc command, for the build record), and
/// compiles `gencode` instead when given ([arch] enforce, the default): torch's BuildExtension adds
/// the -gencode pairs of TORCH_CUDA_ARCH_LIST, and many projects (causal-conv1d, mamba-ssm,
/// flash-attention) add their own for every architecture they know. A command with no architecture
/// option is left to nvcc's default.
/// A compiler cache that the wrappers put in front of every compile they run (sccache: torch's
/// BuildExtension only knows to put ccache there).
struct CompilerLaunch {
  std::string program;  ///< "sccache"; empty: the wrappers run the compilers directly
  /// nvcc: the host compiler it runs (-ccbin) in place of the host wrappers, which would put the
  /// launcher in front a second time, inside the launcher's own nvcc steps (and whose scripts
  /// cannot be sent to a build server as a toolchain).
  std::filesystem::path ccbin;
  std::filesystem::path host_dir;  ///< the host wrappers' folder: a -ccbin into it is replaced
};

/// A cross-build of a command: the build torch's folder → the target torch's, and the toolkit's
/// library folder (-L, exactly) → the target runtime's. Empty for any other build.
std::vector<ArgRewrite> cross_rewrites(const plan::Plan& plan);

/// The script runs `opforge __nvcc <rule.json> ARGS...` (wrap_command.h), which rewrites the
/// arguments by the rule beside it (nvcc_args.h: rewrite_nvcc) and runs nvcc.
struct NvccWrapper {
  std::filesystem::path path;        ///< <cache_dir>/nvcc/<16 hex of the text's sha256>/nvcc (named nvcc for ccache)
  std::string text;                  ///< the script
  std::string rule;                  ///< rule.json beside it: the NvccRule
  std::vector<std::string> gencode;  ///< what replaces the project's options; empty: they are kept
};
/// `stamp` (compiler::stamp of the real nvcc) goes into the folder's name with the text: a toolkit
/// upgraded in place gets a new wrapper, and ccache a new key (the architectures are in the text,
/// so two arch lists never share a cache entry).
/// With `random_seed` (an nvcc that takes -frandom-seed: nvcc_takes_random_seed), each compile
/// that names its output (-o) and no seed of its own gets -frandom-seed=<the output's file name>.
/// With `launch.program`, each compile (-c) runs as `<program> <nvcc> ...` with -ccbin naming
/// launch.ccbin unless the project names a host compiler of its own.
/// With `stable_names` (an nvcc that takes -Xcicc/-Xcudafe=--orig_src_path_name), each compile
/// that names its output gets both, set to the output's file name: cicc and cudafe++ otherwise
/// derive nvcc's _INTERNAL_<hash> prefixes from the source's absolute path, which a build server
/// of sccache-dist sees elsewhere each time.
/// `self` is the command that runs this opforge (probe::self_command); its stamp belongs in `stamp`
/// too, so that another opforge (another rule's reading) gets another wrapper and ccache key.
NvccWrapper nvcc_wrapper(const std::filesystem::path& cache_dir, const std::vector<std::string>& self,
                         const std::filesystem::path& nvcc, const std::string& stamp = {},
                         const std::vector<std::string>& gencode = {}, bool random_seed = false,
                         const CompilerLaunch& launch = {}, bool stable_names = false,
                         const std::vector<ArgRewrite>& rewrites = {});

/// Whether the plan's nvcc takes -Xcicc=--orig_src_path_name and -Xcudafe=--orig_src_path_name.
bool nvcc_takes_stable_names(const plan::Plan& plan);

/// Whether the plan's nvcc takes -frandom-seed (compiler/flags.h).
bool nvcc_takes_random_seed(const plan::Plan& plan);

/// The -gencode options a command build of `plan` compiles in place of the project's own: the
/// plan's arch list, or nothing when [arch] enforce = false.
std::vector<std::string> enforced_gencode(const plan::Plan& plan);

/// The GPU targets that architecture options ask nvcc for, from the wrapper's log (one nvcc command
/// a line: "-gencode arch=compute_80,code=sm_80 -arch=sm_90"): "sm_XX" for code of that GPU,
/// "compute_XX" for PTX, sorted and deduplicated. `-arch=sm_XX` alone means both (nvcc's
/// shorthand); `-arch=compute_XX` alone means its PTX; all, all-major and native are kept as
/// written ("all").
std::vector<std::string> project_arch_targets(std::string_view log);

/// A `sitecustomize.py` that command builds run with (its folder first on PYTHONPATH): an audit hook
/// (PEP 578) that prints `opforge: network: …` once per URL or address when any Python process of
/// the build opens a URL or connects a socket — a setup.py that tries to download a prebuilt wheel
/// (causal-conv1d, flash-attention, mamba-ssm without their *_FORCE_BUILD switch) is then visible
/// in the build's output and log. It imports the sitecustomize it shadows, if there is one. With
/// kPythonTempVariable set (below), it also makes Python's temporary names the same every build.
struct NetworkWatch {
  std::filesystem::path dir;  ///< <cache_dir>/pywatch/<16 hex of the text's sha256>
  std::string text;           ///< sitecustomize.py
};
NetworkWatch network_watch(const std::filesystem::path& cache_dir);
Status write_network_watch(probe::FileSystem& fs, const NetworkWatch& w);

/// What a command build adds to its environment to watch the project: `watch`'s folder first on
/// PYTHONPATH and, with `arch_log`, the nvcc wrapper's log (kNvccArchLogVariable).
void add_watch_environment(settings::ChildEnv& env, const NetworkWatch& watch, const std::filesystem::path& arch_log);

/// The variable the wrapper writes the project's architecture options to.
inline constexpr const char* kNvccArchLogVariable = "OPFORGE_NVCC_ARCH_LOG";

/// The folder the watch's sitecustomize.py makes Python's temporary files in, with names from a
/// fixed seed: scikit-build-core's wheel staging folder is CMake's CMAKE_INSTALL_PREFIX, and a
/// project's configure_file writes it into the wheel (llama.cpp's llama.pc). /tmp, not the
/// caller's TMPDIR nor the cache folder: the path must be the same on every machine.
inline constexpr const char* kPythonTempVariable = "OPFORGE_PYTHON_TMPDIR";

/// Sets kPythonTempVariable to /tmp/opforge-py-<tree_name> (the scratch tree's folder name, its
/// content hash: the same for the same content, whichever cache folder holds it).
void add_stable_temp_names(settings::ChildEnv& env, std::string_view tree_name);

/// Writes the wrapper unless the same text is there already (its mtime stays: ccache checks the
/// compiler's mtime).
Status write_nvcc_wrapper(probe::FileSystem& fs, const NvccWrapper& w);

/// The wrapper a build of `plan` (with a toolkit chosen) uses in `cache_dir`, given its host
/// wrappers (nullptr: none).
NvccWrapper plan_nvcc_wrapper(const probe::FileSystem& fs, const plan::Plan& plan,
                              const std::filesystem::path& cache_dir, const HostWrappers* host);

/// The wrapper a command build of `plan` uses (in probe::default_cache_dir), or nothing when the plan
/// chose no toolkit: what `opforge plan` and `opforge env` name.
std::optional<NvccWrapper> default_nvcc_wrapper(probe::Machine m, const plan::Plan& plan);

/// gcc's option for the heap size (KiB) below which it does not collect its garbage: the host
/// wrappers add it, with plan.gcc_gc_heap_kib, to every gcc compile ([build] gcc_gc_heap_mib, whose
/// comment and docs/recipe.md give the measurements). It changes when gcc frees memory, never what
/// it compiles.
inline constexpr std::string_view kGccGcParam = "--param=ggc-min-heapsize=";

/// The host compilers a command build runs (CC, CXX, nvcc's -ccbin, first on PATH): scripts that
/// run the plan's compilers (compiler::invocation: the shim, the cpu_target wrappers or the
/// compiler itself) with `-g0` after every argument of a compile (`-c`). opforge strips every library
/// of the wheel it re-packs (wheel::normalize), so the debug information that Python's CFLAGS and
/// projects ask for (`-g`; DeepSpeed's builders add their own) is thrown away: it costs about a
/// third of each torch extension's compile time, and GCC and clang never let -g change the code
/// they generate, so the stripped libraries are the same bytes with or without it.
struct HostWrappers {
  /// <cache_dir>/host/<16 hex of a sha256 over the scripts and the real compilers' size and mtime>:
  /// a compiler upgraded in place gets new wrappers, and ccache (which checks the compiler's mtime)
  /// a new key.
  std::filesystem::path dir;
  std::filesystem::path cc, cxx;  ///< what CC and CXX name: dir/gcc and dir/g++ (dir/cc and dir/c++ for clang)
  std::vector<std::pair<std::string, std::string>> files;  ///< file name in dir → script
  std::vector<std::pair<std::string, std::string>> rules;  ///< "g++.rule.json" → its HostRule (host_args.h)
};
/// Nothing without a host compiler in the plan, or when its paths are not absolute. With
/// `launcher` ("sccache"), each compile runs as `<launcher> <compiler> ... -g0`.
/// Each script runs `opforge __host <name>.rule.json ARGS...` (wrap_command.h), `self` being the
/// command that runs this opforge (default: probe::self_command).
std::optional<HostWrappers> host_wrappers(const probe::FileSystem& fs, const std::filesystem::path& cache_dir,
                                          const plan::Plan& plan, const std::string& launcher = {},
                                          std::vector<std::string> self = {});

/// The launch the nvcc wrapper of `plan` uses, given its host wrappers (nullptr: none) and the
/// cache folder its launcher is in.
CompilerLaunch nvcc_launch(const plan::Plan& plan, const HostWrappers* host,
                           const std::filesystem::path& cache_dir = {});

/// Writes each script unless the same text is there already (its mtime stays, as for the nvcc wrapper).
Status write_host_wrappers(probe::FileSystem& fs, const HostWrappers& w);

/// The host wrappers a command build of `plan` uses (in probe::default_cache_dir), or nothing.
std::optional<HostWrappers> default_host_wrappers(probe::Machine m, const plan::Plan& plan);

}  // namespace opforge::compile
