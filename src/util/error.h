#pragma once
/// Errors as values. Leaf functions return Result<T>; one place (cli/main.cpp) turns an Error
/// into a message and an exit code.
#include <string>
#include <utility>
#include "util/expected.h"

namespace opforge {

/// What went wrong, which decides the exit code (docs/architecture.md).
enum class ErrorKind {
  bad_input,    ///< recipe, flags, environment values: exit 2
  unsatisfied,  ///< a valid recipe the machine cannot satisfy (no toolkit, no compiler, missing lib): exit 3
  failed,       ///< a build step failed, I/O failed, anything else: exit 1
};

/// Where in a text file an error points (1-based); empty file means "no location".
struct Location {
  std::string file;
  int line = 0;
  int column = 0;
  std::string source_line;  ///< the offending line, shown with a caret under `column`
};

struct Error {
  ErrorKind kind = ErrorKind::failed;
  std::string message;  ///< one sentence: what is wrong
  std::string hint;     ///< how to fix it (may be empty)
  Location where;

  /// `file:line:col: message`, the line, a caret, then the hint — the full text a user sees.
  std::string render() const;
};

int exit_code(ErrorKind kind);

template <typename T>
using Result = opforge::expected<T, Error>;

using Status = opforge::expected<void, Error>;

inline opforge::unexpected<Error> fail(ErrorKind kind, std::string message, std::string hint = {},
                                       Location where = {}) {
  return opforge::unexpected(Error{kind, std::move(message), std::move(hint), std::move(where)});
}
inline opforge::unexpected<Error> bad_input(std::string message, std::string hint = {}, Location where = {}) {
  return fail(ErrorKind::bad_input, std::move(message), std::move(hint), std::move(where));
}
inline opforge::unexpected<Error> unsatisfied(std::string message, std::string hint = {}) {
  return fail(ErrorKind::unsatisfied, std::move(message), std::move(hint));
}
inline opforge::unexpected<Error> failure(std::string message, std::string hint = {}) {
  return fail(ErrorKind::failed, std::move(message), std::move(hint));
}

}  // namespace opforge

/// Keeps the happy path straight: `auto x = OPFORGE_TRY(f());` returns f's error from the caller.
/// A GNU statement expression (`({ ... })`): gcc and clang accept it in -std=c++20 mode, and
/// standard C++ has no expression that can return from the enclosing function; opforge builds only
/// with those two compilers (a -Wpedantic build would flag each use).
#define OPFORGE_TRY(expr)                                                                         \
  ({                                                                                              \
    auto&& opforge_try_result_ = (expr);                                                          \
    if (!opforge_try_result_) return opforge::unexpected(std::move(opforge_try_result_).error()); \
    std::move(opforge_try_result_).value();                                                       \
  })
/// For Status (void) results.
#define OPFORGE_CHECK(expr)                                                                           \
  do {                                                                                                \
    auto&& opforge_check_result_ = (expr);                                                            \
    if (!opforge_check_result_) return opforge::unexpected(std::move(opforge_check_result_).error()); \
  } while (0)
