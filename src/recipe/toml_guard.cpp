#include "recipe/toml_guard.h"

#include <cstdio>

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
  else if (c == 0xE0) { n = 3; lo = 0xA0; }
  else if (c == 0xED) { n = 3; hi = 0x9F; }
  else if (c >= 0xE1 && c <= 0xEF) n = 3;
  else if (c == 0xF0) { n = 4; lo = 0x90; }
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else if (c == 0xF4) { n = 4; hi = 0x8F; }
  else return 0;
  if (i + n > text.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

bool bare_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

std::string hex(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", c);
  return buf;
}

}  // namespace

std::optional<TomlGuardError> check_toml_text(std::string_view text) {
  if (text.size() > kMaxTomlBytes)
    return TomlGuardError{1, 1,
                          "file is " + std::to_string(text.size()) + " bytes; the limit is " +
                              std::to_string(kMaxTomlBytes),
                          "recipes and op.toml files are a few kB: is this the right file?"};
  enum class State { normal, comment, basic, literal, ml_basic, ml_literal } state = State::normal;
  int line = 1, column = 0;  // column of the character being looked at
  int depth = 0;             // open '[' / '{' of values
  bool after_equals = false; // a value follows on this logical line
  int key_dots = 0;
  std::string open;           // the '[' and '{' of values still open, innermost last
  bool trimming = false;      // after a line-ending backslash in a """ string
  auto error = [&](std::string message, std::string hint = {}) {
    return TomlGuardError{line, column, std::move(message), std::move(hint)};
  };
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    const auto u = static_cast<unsigned char>(c);
    ++column;
    std::size_t n = utf8_length(text, i);
    if (n == 0)
      return error("invalid UTF-8 (byte " + hex(u) + ")", "save the file as UTF-8");
    if (n > 1) {
      // TOML++ 3.3.0 trims the whitespace after a line-ending backslash with a whitespace test
      // that is undefined for most non-ASCII code points.
      if (state == State::ml_basic && trimming)
        return error("non-ASCII character right after a line-ending backslash",
                     "put an ASCII character first, or remove the backslash");
      trimming = false;
      if (state == State::normal)
        return error("non-ASCII character outside a string",
                     "TOML keys are ASCII letters, digits, '_' and '-'; quote other keys (\"...\")");
      i += n;
      continue;
    }
    if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {  // CRLF: one line end
      ++i;
      continue;
    }
    if ((u < 0x20 && c != '\t' && c != '\n') || u == 0x7F)
      return error("control character " + hex(u) + " in the file",
                   "remove it (escape it as \\u00XX inside a \"basic\" string)");
    if (c == '\n') {
      ++line;
      column = 0;
      if (state == State::comment || state == State::basic || state == State::literal)
        state = State::normal;  // an unterminated one-line string is TOML++'s error to report
      if (state == State::normal && depth == 0) {
        after_equals = false;
        key_dots = 0;
      }
      ++i;
      continue;
    }
    switch (state) {
      case State::comment: break;
      case State::basic:
        if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n') { ++i; ++column; }
        else if (c == '"') state = State::normal;
        break;
      case State::literal:
        if (c == '\'') state = State::normal;
        break;
      case State::ml_basic:
        if (c == ' ' || c == '\t') break;
        trimming = false;
        if (c == '\\') {
          std::size_t k = i + 1;
          while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
          if (k < text.size() && (text[k] == '\n' || text[k] == '\r')) trimming = true;
          else if (i + 1 < text.size()) { ++i; ++column; }
        }
        else if (text.substr(i, 3) == "\"\"\"") { state = State::normal; i += 2; column += 2; }
        break;
      case State::ml_literal:
        if (text.substr(i, 3) == "'''") { state = State::normal; i += 2; column += 2; }
        break;
      case State::normal:
        if (c == '#') state = State::comment;
        else if (text.substr(i, 3) == "\"\"\"") { state = State::ml_basic; i += 2; column += 2; }
        else if (text.substr(i, 3) == "'''") { state = State::ml_literal; i += 2; column += 2; }
        else if (c == '"') state = State::basic;
        else if (c == '\'') state = State::literal;
        else if (c == '`')
          return error("'`' outside a string", "TOML strings are quoted with \" or '");
        else if (c == '=') after_equals = true;
        else if (c == '{') { ++depth; open += '{'; }
        else if (c == '}' || (c == ']' && depth > 0)) {
          // TOML++ 3.3.0 asserts (parse_value) on a '}' where an array expects a value.
          if (!open.empty() && open.back() != (c == '}' ? '{' : '['))
            return error(std::string("'") + c + "' closes a '" + open.back() + "'");
          if (depth > 0) --depth;
          if (!open.empty()) open.pop_back();
        }
        else if (c == '.' && depth == 0 && !after_equals && ++key_dots > 64)
          return error("key with more than 64 dotted parts");
        else if (c == '[') {
          if (depth > 0 || after_equals) { ++depth; open += '['; break; }
          // A table header: after "[" or "[[" and spaces, a key must start.
          std::size_t k = i + 1;
          if (k < text.size() && text[k] == '[') ++k;
          while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
          if (k >= text.size() || !(bare_key_char(text[k]) || text[k] == '"' || text[k] == '\'')) {
            column += static_cast<int>(k - i);
            return error("a table header needs a key after '['",
                         "write [name] or [\"quoted name\"]");
          }
        }
        break;
    }
    ++i;
  }
  return std::nullopt;
}

}  // namespace opforge::recipe
