#pragma once
/// What a project's own build files say about its CUDA code, read without running anything of the
/// project: the environment switches and CMake options that turn its CUDA extensions on or off
/// (torch extensions commonly compile CUDA only with FORCE_CUDA=1 when no GPU is visible), and
/// whether its tree holds CUDA sources at all. A command build uses it to know whether a wheel
/// without GPU code is a mistake, and to name the switch in the error.
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "probe/machine.h"

namespace opforge::project {

/// One switch a build file reads.
struct Switch {
  std::string name;  ///< "FORCE_CUDA", "GGML_CUDA"
  std::string file;  ///< relative to the project's root: "setup.py", "CMakeLists.txt"
  int line = 0;      ///< 1-based
  std::string text;  ///< that line, trimmed and cut to a printable length
  /// The switch turns CUDA off when set (FLASH_ATTENTION_SKIP_CUDA_BUILD, *_DISABLE_CUDA, *_NO_CUDA).
  bool turns_off = false;
  /// A CMake option (`option(GGML_CUDA …)`): set with -D in CMAKE_ARGS, not in the environment.
  bool cmake_option = false;

  bool operator==(const Switch&) const = default;
};

/// The switches one build file reads: environment variables (os.environ.get/os.getenv/os.environ[…]
/// /"X" in os.environ in Python, $ENV{X} in CMake) and CMake options whose names speak of CUDA or
/// GPUs, or of building an extension (FORCE_CUDA, BUILD_CUDA_EXT, APEX_CUDA_EXT, GGML_CUDA).
/// Variables every CUDA build reads for other reasons (CUDA_HOME, TORCH_CUDA_ARCH_LIST, arch lists,
/// CUDA_VISIBLE_DEVICES) are not switches. Each name once, at its first line. Pure.
std::vector<Switch> find_switches(std::string_view file, std::string_view text);

/// A project's build files as read by read_build_files.
struct BuildFiles {
  std::vector<Switch> switches;                 ///< from setup.py, CMakeLists.txt and pyproject.toml at the root
  std::size_t cuda_sources = 0;                 ///< .cu/.cuh files in the tree
  std::vector<std::string> cuda_source_sample;  ///< the first few, relative, sorted
  bool walk_cut = false;                        ///< the tree was larger than the walk's bound
};

/// Reads the build files at `root` and counts the CUDA sources under it (build/, .git and hidden
/// folders skipped; at most kWalkEntries entries). Missing files are not an error.
BuildFiles read_build_files(const probe::FileSystem& fs, const std::filesystem::path& root);

inline constexpr std::size_t kWalkEntries = 200000;

/// How to turn the project's CUDA on, for an error or a warning: each switch with where it is read
/// and what to write in the recipe ([build.env] NAME = "1"; CMAKE_ARGS for a CMake option; for a
/// switch that turns CUDA off, that it must not be set). `env` is what the build ran with: a
/// switch set there is said to be set. Empty when there is no switch.
std::string switch_hint(const std::vector<Switch>& switches, const std::map<std::string, std::string>& env);

}  // namespace opforge::project
