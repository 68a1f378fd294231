#pragma once
/// What a failed build said, read from its log: shared by both kinds of build (a native build's
/// failed op, a command build's failed op step, a failed build command's error block).
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace opforge::compile {

/// The line of a build log that says why the build failed, first found of, in this order:
/// 1. a compiler's error as `file:line: error: message` (gcc's and clang's `file:line:col: error:`,
///    nvcc's `file(line): error:`, `tree/` taken off paths inside the tree), or nvcc's own
///    `nvcc fatal : …` line as it is;
/// 2. ninja's own `ninja: error: …` (an input missing and no rule to make it, a cycle);
/// 3. the first line naming an error: a linker's, ninja's `FAILED: …`, setuptools'
///    `error: command '…' failed …`, or ninja stopped from outside (`interrupted by user`).
/// Lines of the third kind are cut to 400 characters. nullopt when no line says why.
std::optional<std::string> failure_reason(std::string_view log, const std::filesystem::path& tree);

/// failure_reason(), else the log's last non-empty line; empty for an empty log.
std::string first_compiler_error(std::string_view log, const std::filesystem::path& tree);

/// The log's last `n` lines, each Python traceback shortened first: of its frames
/// (`  File "…", line N, in f` and the source lines under it) only the last stays, the others
/// become one line `  [K frames left out]`. The frames deep in setuptools and torch's
/// cpp_extension say nothing of the project; the exception's own line stays.
std::string log_tail(std::string_view log, std::size_t n);

}  // namespace opforge::compile
