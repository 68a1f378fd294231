#pragma once
/// The environment a command build runs in, and what `opforge plan` and `opforge env` print of it.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

// plan.h uses `fs` unqualified; give it the alias it expects.
namespace opforge {}

#include "compile/wrap/wrappers.h"
#include "plan/plan.h"
#include "probe/machine.h"
#include "util/error.h"

namespace opforge::compile {

/// scikit-build-core's build folder in a command build's tree (SKBUILD_BUILD_DIR), relative to
/// the tree: under build/, which a scratch copy leaves out of the source.
inline constexpr const char* kSkbuildBuildDir = "build/skbuild";

/// What every command build's CMAKE_ARGS starts with: build-tree RPATHs relative to $ORIGIN, the
/// same in every build folder.
inline constexpr const char* kBuildRpathUseOrigin = "-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON";

/// One way the plan's arch list reaches a command build's project: a variable (CMAKE_ARGS: the
/// argument appended to it), its value, and who reads it.
struct ArchChannel {
  std::string variable;
  std::string value;
  std::string reader;
};

/// Every channel, in the order the environment gets them: TORCH_CUDA_ARCH_LIST (the plan's
/// exports), CUDAARCHS, CMAKE_ARGS' -DCMAKE_CUDA_ARCHITECTURES ([arch] enforce), [arch] env's
/// variables, [arch] cmake_define's -D arguments. Empty without a toolkit or an arch list.
/// What `plan` shows, and what set_cmake sets.
std::vector<ArchChannel> arch_channels(const plan::Plan& plan);

/// The command's environment: `base` (the caller's environment), then plan.exports on top, then
/// what makes the output reproducible and uses the plan's compiler (compiler::invocation):
/// CC/CXX (the chosen host compiler, or its shim), NVCC_PREPEND_FLAGS=-ccbin <shim or c++>,
/// NVCC_APPEND_FLAGS / CFLAGS / CXXFLAGS with -ffile-prefix-map=<tree>=. and one fixed
/// -frandom-seed, LDFLAGS with -Wl,--build-id=none, SOURCE_DATE_EPOCH, MAX_JOBS, PYTHONHASHSEED=0,
/// and the compiler cache (recipe [build] cache: CCACHE_* for torch's own ccache wrapping; none:
/// TORCH_NO_COMPILER_WRAPPER=1). setuptools takes CFLAGS/CXXFLAGS from the environment instead of
/// Python's own (sysconfig CFLAGS: -DNDEBUG -fwrapv -O2 ...), so those come first, then the
/// caller's, then opforge's. `tree` is where the command runs (default: plan.source.root).
/// Paths with spaces cannot be passed through NVCC_*_FLAGS (nvcc splits them on spaces).
/// With a toolkit chosen and `nvcc_wrapper` given (nvcc_wrapper_path), PYTORCH_NVCC names it
/// (behind `ccache` with [build] cache = "ccache": torch wraps only its own nvcc).
/// With `host` given (host_wrappers), CC, CXX and -ccbin name its scripts and its folder goes
/// first on PATH. A CMake the project runs gets the same toolkit, compilers, arch list, jobs and
/// cache through CMake's own variables (CUDACXX, CUDAToolkit_ROOT, CUDAHOSTCXX, CUDAARCHS,
/// CMAKE_ARGS, CMAKE_BUILD_PARALLEL_LEVEL, CMAKE_*_COMPILER_LAUNCHER, SKBUILD_BUILD_DIR:
/// set_cmake's rules), and the project's own arch variables (arch_channels).
/// With `toolkit_view` (toolkit_view.h: the chosen toolkit's folders, its bin/nvcc the wrapper),
/// CUDA_HOME, CUDA_PATH and the toolkit's bin/ on PATH name the view instead, and the host
/// compiles map the view's paths back to the toolkit's (-ffile-prefix-map), so their output is
/// as it was: every nvcc a project finds through them runs the wrapper.
std::map<std::string, std::string> command_environment(const std::map<std::string, std::string>& base,
                                                       const plan::Plan& plan, const std::filesystem::path& tree = {},
                                                       const std::filesystem::path& nvcc_wrapper = {},
                                                       const HostWrappers* host = nullptr,
                                                       const std::filesystem::path& toolkit_view = {});

/// The variables command_environment sets or changes relative to `base`, and every plan export
/// (even where `base` agrees): what `opforge env` and `opforge plan` print.
std::map<std::string, std::string> command_exports(const std::map<std::string, std::string>& base,
                                                   const plan::Plan& plan, const std::filesystem::path& tree = {},
                                                   const std::filesystem::path& nvcc_wrapper = {},
                                                   const HostWrappers* host = nullptr);

/// command_exports with the wrappers a build of `plan` uses (default_nvcc_wrapper,
/// default_host_wrappers): what `opforge plan` and `opforge env` print. Writes nothing.
std::map<std::string, std::string> planned_exports(probe::Machine m, const plan::Plan& plan,
                                                   const std::filesystem::path& tree = {});

/// Writes those wrappers, for `opforge env`, whose exports name them.
Status write_planned_wrappers(probe::Machine m, const plan::Plan& plan);

}  // namespace opforge::compile
