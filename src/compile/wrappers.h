#pragma once
/// The scripts a command build compiles through: nvcc without -lineinfo, and host compilers that
/// add -g0 to every compile.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// plan.h uses `fs` unqualified; give it the alias it expects.
namespace opforge {
namespace fs = std::filesystem;
}

#include "plan/plan.h"
#include "probe/machine.h"
#include "util/error.h"

namespace opforge::compile {

/// The nvcc a command build's torch extensions compile with (torch's ninja builds run
/// $PYTORCH_NVCC): a script that runs the toolkit's `nvcc` without `-lineinfo` /
/// `--generate-line-info`. The line table those add records each source and header file's
/// modification time (DWARF file entries), and the scratch tree's files and a pip-installed torch's
/// headers get theirs when they are written: DeepSpeed's fused_adam (built with -lineinfo) would
/// otherwise differ from one build to the next in a few bytes of its .nv_fatbin.
struct NvccWrapper {
  fs::path path;     ///< <cache_dir>/nvcc/<16 hex of the text's sha256>/nvcc (named nvcc for ccache)
  std::string text;  ///< the script
};
/// `stamp` (compiler::stamp of the real nvcc) goes into the folder's name with the text: a toolkit
/// upgraded in place gets a new wrapper, and ccache a new key.
NvccWrapper nvcc_wrapper(const fs::path& cache_dir, const fs::path& nvcc, const std::string& stamp = {});

/// Writes the wrapper unless the same text is there already (its mtime stays: ccache checks the
/// compiler's mtime).
Status write_nvcc_wrapper(probe::FileSystem& fs, const NvccWrapper& w);

/// The wrapper a command build of `plan` uses (in probe::default_cache_dir), or nothing when the plan
/// chose no toolkit: what `opforge plan` and `opforge env` name.
std::optional<NvccWrapper> default_nvcc_wrapper(probe::Machine m, const plan::Plan& plan);

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
  fs::path dir;
  fs::path cc, cxx;  ///< what CC and CXX name: dir/gcc and dir/g++ (dir/cc and dir/c++ for clang)
  std::vector<std::pair<std::string, std::string>> files;  ///< file name in dir → script
};
/// Nothing without a host compiler in the plan, or when its paths are not absolute.
std::optional<HostWrappers> host_wrappers(const probe::FileSystem& fs, const fs::path& cache_dir,
                                          const plan::Plan& plan);

/// Writes each script unless the same text is there already (its mtime stays, as for the nvcc wrapper).
Status write_host_wrappers(probe::FileSystem& fs, const HostWrappers& w);

/// The host wrappers a command build of `plan` uses (in probe::default_cache_dir), or nothing.
std::optional<HostWrappers> default_host_wrappers(probe::Machine m, const plan::Plan& plan);

}  // namespace opforge::compile
