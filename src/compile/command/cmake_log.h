#pragma once
/// What a failed command build's log says of a CMake the project ran: its first error, in CMake's
/// own words, and whether it asked for a newer CUDA than the plan's toolkit (pure).
#include <optional>
#include <string>
#include <string_view>

namespace opforge::compile {

struct CmakeError {
  std::string text;  ///< the "CMake Error at ..." line and its indented lines, as CMake wrote them
  /// The toolkit version the project asked for when FindCUDAToolkit (find_package(CUDAToolkit X))
  /// or the CUDA language found an older one: "14.0"; empty otherwise.
  std::string wants_cuda;
};

/// The first CMake error in `log`; nullopt when there is none.
std::optional<CmakeError> first_cmake_error(std::string_view log);

}  // namespace opforge::compile
