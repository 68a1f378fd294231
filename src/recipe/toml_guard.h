#pragma once
/// A pre-check of TOML text before it reaches TOML++. Debian 12's TOML++ 3.3.0 has undefined
/// behaviour on some invalid input: `[`a]` (and `[[[a]]]`, `[[=`) enter parse_key() with a
/// character that is neither a bare-key character nor a quote, which is an assertion in debug
/// builds and a __builtin_assume in release builds (fixed upstream in marzer/tomlplusplus pull
/// request #301); a non-ASCII byte where a key is expected (`Κ = 1`) reaches
/// __builtin_unreachable; very deep dotted keys overflow the stack (pull request #242, in 3.4.1);
/// a date-like value, a space and a lone digit (`d = 1979-05-27 0`) fails an assertion in
/// parse_value (an assumption in release builds).
/// Each is invalid TOML 1.0 anyway, so refusing it here changes nothing for valid files.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace opforge::recipe {

/// Where the guard stopped and why (1-based line, column in characters).
struct TomlGuardError {
  int line = 0;
  int column = 0;
  std::string message;
  std::string hint;
};

/// The largest recipe or op.toml read (both are a few kB).
inline constexpr std::size_t kMaxTomlBytes = 1 << 20;

/// nullopt when `text` can go to TOML++: valid UTF-8, at most kMaxTomlBytes, no control
/// characters but tab and line ends, outside strings and comments nothing but ASCII and no '`',
/// table headers that start with a key, keys of at most 64 dotted parts, no quote in the middle
/// of a bare value and no value followed by a space and a lone digit.
std::optional<TomlGuardError> check_toml_text(std::string_view text);

}  // namespace opforge::recipe
