#pragma once
/// A cursor for the small grammars of tool output and names (`release 13.0`, `#if __GNUC__ > 15`,
/// `gcc-12`). Hand-written scanning instead of std::regex: libstdc++'s regex recurses once per
/// character (a long input overflows the stack) and costs milliseconds per search, where these
/// grammars need one pass.
#include <cstddef>
#include <optional>
#include <string_view>

namespace opforge::scan {

/// The characters std::isspace takes in the "C" locale (what regex `\s` means there).
constexpr bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
constexpr bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
constexpr bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
constexpr bool is_alnum(char c) { return is_digit(c) || is_lower(c) || is_upper(c); }

/// The unread rest of a text. Every step consumes only when it succeeds.
struct Cursor {
  std::string_view rest;

  bool done() const { return rest.empty(); }
  bool peek(char c) const { return !rest.empty() && rest.front() == c; }
  /// Skips white space (`\s*`); how many characters it skipped.
  std::size_t spaces() {
    std::size_t n = 0;
    while (n < rest.size() && is_space(rest[n])) ++n;
    rest.remove_prefix(n);
    return n;
  }
  bool literal(std::string_view word) {
    if (!rest.starts_with(word)) return false;
    rest.remove_prefix(word.size());
    return true;
  }
  /// The longest run of characters `keep` accepts (possibly empty), consumed.
  template <class Pred>
  std::string_view run(Pred keep) {
    std::size_t n = 0;
    while (n < rest.size() && keep(rest[n])) ++n;
    auto out = rest.substr(0, n);
    rest.remove_prefix(n);
    return out;
  }
  /// `[0-9]*`
  std::string_view digits() { return run(is_digit); }
};

constexpr bool is_quote(char c) { return c == '\'' || c == '"'; }

/// `['"]([^'"]*)['"]` at the cursor (either quote may close): the text between the quotes.
inline std::optional<std::string_view> quoted(Cursor& c) {
  if (c.done() || !is_quote(c.rest.front())) return std::nullopt;
  c.rest.remove_prefix(1);
  auto inside = c.run([](char ch) { return !is_quote(ch); });
  if (c.done()) return std::nullopt;
  c.rest.remove_prefix(1);
  return inside;
}

/// Calls `match(cursor)` at the start of every line (the text's start, and after each '\n')
/// until it returns true.
template <class Match>
void at_line_starts(std::string_view text, Match match) {
  for (std::size_t at = 0;;) {
    if (match(Cursor{text.substr(at)})) return;
    auto nl = text.find('\n', at);
    if (nl == std::string_view::npos) return;
    at = nl + 1;
  }
}

/// `[0-9]+(\.[0-9]+)*` over all of `text`.
constexpr bool is_dotted_number(std::string_view text) {
  bool digit_before = false;
  for (char c : text) {
    if (is_digit(c)) digit_before = true;
    else if (c == '.' && digit_before) digit_before = false;
    else return false;
  }
  return digit_before;
}

}  // namespace opforge::scan
