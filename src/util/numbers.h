#pragma once
/// The one integer parser: whole-text base-10 integers through std::from_chars, which never
/// throws (std::stoi aborts the process on "99999999999" when nothing catches its exception).
#include <charconv>
#include <concepts>
#include <string_view>
#include "util/expected.h"

namespace opforge::numbers {

enum class IntError {
  not_integer,   ///< empty, a sign alone, letters, spaces, a fraction, ...
  out_of_range,  ///< digits only, but too large (or too small) for the type
};

/// Parses all of `text` (no spaces, no '+') as a base-10 T.
template <std::integral T>
opforge::expected<T, IntError> parse_int(std::string_view text) {
  T v{};
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || p == text.data()) return opforge::unexpected(IntError::not_integer);
  if (ec == std::errc::result_out_of_range) {
    // from_chars stops at the end of the digits: anything after them makes it "not an integer".
    while (p != end && *p >= '0' && *p <= '9') ++p;
    return opforge::unexpected(p == end ? IntError::out_of_range : IntError::not_integer);
  }
  if (ec != std::errc() || p != end) return opforge::unexpected(IntError::not_integer);
  return v;
}

}  // namespace opforge::numbers
