#pragma once
/// The CUDA version scanners: pure parsers over captured real texts (a toolkit's version files,
/// `nvcc --version`, cuda.h, an nvcc wrapper script); nullopt when the text says nothing usable.
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "util/version.h"

namespace opforge::cuda {

namespace fs = std::filesystem;

/// `v` with its patch dropped: toolkits are compared by major.minor.
std::optional<Version> major_minor(std::optional<Version> v);

std::optional<Version> parse_version_json(std::string_view text);  ///< "cuda": {"version": ...}
std::optional<Version> parse_version_txt(std::string_view text);   ///< CUDA Version 10.2.89
std::optional<Version> parse_nvcc_version(std::string_view text);  ///< release 13.0, V13.0.88
std::optional<Version> parse_cuda_h(std::string_view text);        ///< #define CUDA_VERSION 13000
/// A wrapper script's `exec /path/to/nvcc "$@"`: the first line (after white space) that execs a
/// path ending in /nvcc, quoted or not.
std::optional<fs::path> parse_nvcc_wrapper(std::string_view script);

/// What an nvcc.profile (beside the nvcc binary; Debian's is a link to /etc/nvcc.profile) adds to
/// every compile and link: the literal absolute folders of its INCLUDES (-I) and LIBRARIES (-L)
/// lines. Folders written with the profile's own variables ($(TOP), $(_HERE_): NVIDIA's layout,
/// relative to the toolkit) are left out: the toolkit's own folders cover them.
struct NvccProfile {
  std::vector<fs::path> include_dirs;
  std::vector<fs::path> library_dirs;
};
NvccProfile parse_nvcc_profile(std::string_view text);

}  // namespace opforge::cuda
