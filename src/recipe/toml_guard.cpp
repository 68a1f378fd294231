#include "recipe/toml_guard.h"

#include <cstdio>
#include <string>

namespace opforge::recipe {
namespace {

/// Length of the UTF-8 sequence at text[i], or 0 when it is not valid UTF-8 (overlong forms,
/// surrogates and code points past U+10FFFF included).
std::size_t utf8_length(std::string_view text, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) {
    n = 3;
    lo = 0xA0;
  } else if (c == 0xED) {
    n = 3;
    hi = 0x9F;
  } else if (c >= 0xE1 && c <= 0xEF) n = 3;
  else if (c == 0xF0) {
    n = 4;
    lo = 0x90;
  } else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else if (c == 0xF4) {
    n = 4;
    hi = 0x8F;
  } else return 0;
  if (i + n > text.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

bool bare_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

std::string hex(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", c);
  return buf;
}

using Found = std::optional<TomlGuardError>;

/// One pass over the text, tracking just enough of TOML's lexical state (strings, comments, open
/// brackets, the key side of a line) to tell where each refused construct is.
class Guard {
 public:
  explicit Guard(std::string_view text) : text_(text) {}

  Found run() {
    while (i_ < text_.size())
      if (auto e = step()) return e;
    return std::nullopt;
  }

 private:
  enum class State { normal, comment, basic, literal, ml_basic, ml_literal };

  TomlGuardError error(std::string message, std::string hint = {}) const {
    return TomlGuardError{line_, column_, std::move(message), std::move(hint)};
  }
  bool at(std::string_view s) const { return text_.substr(i_, s.size()) == s; }
  void skip(std::size_t k) {
    i_ += k;
    column_ += static_cast<int>(k);
  }

  Found step() {
    const char c = text_[i_];
    const auto u = static_cast<unsigned char>(c);
    ++column_;
    std::size_t n = utf8_length(text_, i_);
    if (n == 0) return error("invalid UTF-8 (byte " + hex(u) + ")", "save the file as UTF-8");
    if (n > 1) {
      i_ += n;
      return non_ascii();
    }
    if (c == '\r' && i_ + 1 < text_.size() && text_[i_ + 1] == '\n') {  // CRLF: one line end
      ++i_;
      return std::nullopt;
    }
    if ((u < 0x20 && c != '\t' && c != '\n') || u == 0x7F)
      return error("control character " + hex(u) + " in the file",
                   "remove it (escape it as \\u00XX inside a \"basic\" string)");
    Found found;
    if (c == '\n') end_line();
    else if (state_ == State::normal) found = in_normal(c);
    else in_string_or_comment(c);
    ++i_;
    return found;
  }

  Found non_ascii() {
    // TOML++ 3.3.0 trims the whitespace after a line-ending backslash with a whitespace test
    // that is undefined for most non-ASCII code points.
    if (state_ == State::ml_basic && trimming_)
      return error("non-ASCII character right after a line-ending backslash",
                   "put an ASCII character first, or remove the backslash");
    trimming_ = false;
    if (state_ == State::normal)
      return error("non-ASCII character outside a string",
                   "TOML keys are ASCII letters, digits, '_' and '-'; quote other keys (\"...\")");
    return std::nullopt;
  }

  void end_line() {
    ++line_;
    column_ = 0;
    if (state_ == State::comment || state_ == State::basic || state_ == State::literal)
      state_ = State::normal;  // an unterminated one-line string is TOML++'s error to report
    if (state_ == State::normal && depth_ == 0) {
      after_equals_ = false;
      key_dots_ = 0;
    }
  }

  void in_string_or_comment(char c) {
    switch (state_) {
      case State::basic:
        if (c == '\\' && i_ + 1 < text_.size() && text_[i_ + 1] != '\n') skip(1);
        else if (c == '"') state_ = State::normal;
        break;
      case State::literal:
        if (c == '\'') state_ = State::normal;
        break;
      case State::ml_basic: in_ml_basic(c); break;
      case State::ml_literal:
        if (at("'''")) enter(State::normal, 3);
        break;
      default: break;
    }
  }

  void in_ml_basic(char c) {
    if (c == ' ' || c == '\t') return;
    trimming_ = false;
    if (c == '\\') {
      std::size_t k = i_ + 1;
      while (k < text_.size() && (text_[k] == ' ' || text_[k] == '\t')) ++k;
      if (k < text_.size() && (text_[k] == '\n' || text_[k] == '\r')) trimming_ = true;
      else if (i_ + 1 < text_.size()) skip(1);
    } else if (at("\"\"\"")) {
      enter(State::normal, 3);
    }
  }

  /// Moves to `s` past a delimiter of `width` characters, the first of which is the current one.
  void enter(State s, std::size_t width) {
    state_ = s;
    skip(width - 1);
  }

  Found in_normal(char c) {
    const bool in_value = after_equals_ || depth_ > 0;
    if ((c == '"' || c == '\'') && in_value && (bare_ || (i_ > 0 && inside_bare_value(text_[i_ - 1]))))
      return error("quote in the middle of a value", "a string is quoted from its first character: \"...\" or '...'");
    // A bare value runs on through '{' and '[' for TOML++ (`8{'3-06-u5 0` asserts as `8'32` did):
    // a quote anywhere in it is refused, not only right after a value character.
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ']' || c == '}' || c == '#' || c == '.' ||
        c == '=')
      bare_ = false;
    else if (in_value && c != '"' && c != '\'' && c != '[' && c != '{') {
      if (!bare_)
        if (auto e = date_then_no_time()) return e;
      bare_ = true;
    }
    if (c == '#') enter(State::comment, 1);
    else if (at("\"\"\"")) enter(State::ml_basic, 3);
    else if (at("'''")) enter(State::ml_literal, 3);
    else if (c == '"') enter(State::basic, 1);
    else if (c == '\'') enter(State::literal, 1);
    else if (c == '`') return error("'`' outside a string", "TOML strings are quoted with \" or '");
    else if (c == '=') after_equals_ = true;
    else if (c == '{') open_bracket('{');
    else if (c == '}' || (c == ']' && depth_ > 0)) return close_bracket(c);
    else if (c == '.' && depth_ == 0 && !after_equals_ && ++key_dots_ > 64)
      return error("key with more than 64 dotted parts");
    else if (c == '[') return square_bracket();
    else if (c == ' ' && (after_equals_ || depth_ > 0)) return space_in_value();
    return std::nullopt;
  }

  /// TOML++ reads a quote after a bare value's character (`8'32`) as part of that value, where
  /// this guard would see a string and stop looking: never valid TOML, so refused.
  static bool inside_bare_value(char prev) {
    return !(prev == ' ' || prev == '\t' || prev == '\n' || prev == '\r' || prev == ',' || prev == ']' || prev == '}' ||
             prev == '=' || prev == '[' || prev == '{' || prev == '.' || prev == '"' || prev == '\'');
  }

  /// TOML++ 3.3.0 reads a value of ten characters with '-' fifth and eighth ("1979-05-27"), a
  /// space and a digit as the start of a date-time, and asserts in parse_value when the digit is
  /// the last character of the value (`d = 1979-05-27 0`): an assumption in release builds. A
  /// value followed by a space and a lone digit is never valid TOML (a time has HH:MM), so the
  /// guard refuses it at the end of the file too, where TOML++ would report it itself.
  Found space_in_value() {
    const auto terminator = [](char c) {
      return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ']' || c == '}' || c == ',' || c == '#';
    };
    if (i_ + 1 >= text_.size() || text_[i_ + 1] < '0' || text_[i_ + 1] > '9') return std::nullopt;
    if (i_ + 2 < text_.size() && !terminator(text_[i_ + 2])) return std::nullopt;  // more of a time, maybe
    // The last ten characters before the space, as TOML++ counts them (underscores left out),
    // back to a terminator only: its value may hold '=', '[' or '{' (`a=8[79-05-27 0`).
    std::string value;
    for (std::size_t k = i_; k > 0 && value.size() < 10; --k) {
      const char v = text_[k - 1];
      if (terminator(v)) break;
      if (v != '_') value.insert(value.begin(), v);
    }
    if (value.size() != 10 || value[4] != '-' || value[7] != '-') return std::nullopt;
    column_ += 1;
    return error("'" + value + "' followed by a space and a lone digit",
                 "a date-time is written 1979-05-27 07:32:00 (or 1979-05-27T07:32:00); a date ends before the space");
  }

  /// TOML++ 3.3.0 reads a value that starts with a date and a 'T' or 't' ("1979-05-27T") as a
  /// date-time and assumes a digit follows (parse_time asserts it: `a=8232-06-23t@|:3`, an
  /// assumption in release builds). A date-time's time always starts with a digit, so anything
  /// else there is refused. Called at a bare value's first character.
  Found date_then_no_time() const {
    const auto digit = [&](std::size_t k) { return k < text_.size() && text_[k] >= '0' && text_[k] <= '9'; };
    const std::size_t k = i_;
    for (std::size_t d : {0, 1, 2, 3, 5, 6, 8, 9})
      if (!digit(k + d)) return std::nullopt;
    if (text_[k + 4] != '-' || text_[k + 7] != '-') return std::nullopt;
    if (k + 10 >= text_.size() || (text_[k + 10] != 'T' && text_[k + 10] != 't') || digit(k + 11)) return std::nullopt;
    return TomlGuardError{line_, column_ + 11, "'" + std::string(text_.substr(k, 11)) + "' not followed by a time",
                          "a date-time is written 1979-05-27T07:32:00; a date alone is 1979-05-27"};
  }

  void open_bracket(char c) {
    ++depth_;
    open_ += c;
  }

  Found close_bracket(char c) {
    // TOML++ 3.3.0 asserts (parse_value) on a '}' where an array expects a value.
    if (!open_.empty() && open_.back() != (c == '}' ? '{' : '['))
      return error(std::string("'") + c + "' closes a '" + open_.back() + "'");
    if (depth_ > 0) --depth_;
    if (!open_.empty()) open_.pop_back();
    return std::nullopt;
  }

  /// An array value, or a table header: after "[" or "[[" and spaces, a key must start.
  Found square_bracket() {
    if (depth_ > 0 || after_equals_) {
      open_bracket('[');
      return std::nullopt;
    }
    std::size_t k = i_ + 1;
    if (k < text_.size() && text_[k] == '[') ++k;
    while (k < text_.size() && (text_[k] == ' ' || text_[k] == '\t')) ++k;
    if (k < text_.size() && (bare_key_char(text_[k]) || text_[k] == '"' || text_[k] == '\'')) return std::nullopt;
    column_ += static_cast<int>(k - i_);
    return error("a table header needs a key after '['", "write [name] or [\"quoted name\"]");
  }

  std::string_view text_;
  std::size_t i_ = 0;
  State state_ = State::normal;
  int line_ = 1, column_ = 0;  // column of the character being looked at
  int depth_ = 0;              // open '[' / '{' of values
  bool after_equals_ = false;  // a value follows on this logical line
  bool bare_ = false;          // inside a bare value (a number, a date, true): TOML++ reads on to a terminator
  int key_dots_ = 0;
  std::string open_;       // the '[' and '{' of values still open, innermost last
  bool trimming_ = false;  // after a line-ending backslash in a """ string
};

}  // namespace

std::optional<TomlGuardError> check_toml_text(std::string_view text) {
  if (text.size() > kMaxTomlBytes)
    return TomlGuardError{
        1, 1, "file is " + std::to_string(text.size()) + " bytes; the limit is " + std::to_string(kMaxTomlBytes),
        "recipes and op.toml files are a few kB: is this the right file?"};
  return Guard(text).run();
}

}  // namespace opforge::recipe
