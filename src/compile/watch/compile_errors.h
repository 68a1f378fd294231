#pragma once
/// What a failed compile said, read from its log: shared by both kinds of build (a native build's
/// failed op, a command build's failed op step).
#include <filesystem>
#include <string>
#include <string_view>

namespace opforge::compile {

/// The first compiler error of a build log as `file:line: error: message`: gcc's and clang's
/// `file:line:col: error:` and nvcc's `file(line): error:` lines, with `tree/` taken off paths
/// inside the tree. Without such a line, the first line naming an error (a linker's, ninja's
/// `FAILED:`, or ninja stopped from outside: `interrupted by user`), else the log's last non-empty
/// line; empty for an empty log.
std::string first_compiler_error(std::string_view log, const std::filesystem::path& tree);

}  // namespace opforge::compile
