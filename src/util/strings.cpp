#include "util/strings.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace opforge::strings {

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t pos = text.find(sep, start);
    out.emplace_back(text.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string shell_quote(std::string_view word) {
  if (!word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) ||
               std::string_view("@%+=:,./_-").find(c) != std::string_view::npos;
      }))
    return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i) out += ' ';
    out += shell_quote(argv[i]);
  }
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::optional<std::string> did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  // A third of the length (at least 2) separates typos from different words.
  const size_t limit = std::max<size_t>(2, word.size() / 3);
  const std::string lower = to_lower(word);
  std::optional<std::string> best;
  size_t best_d = 0;
  for (auto& c : candidates) {
    // The distance is at least the difference in length: a candidate that cannot be within the
    // limit is skipped, so that a long word (a 16 kB value) costs no quadratic comparison.
    size_t gap = word.size() > c.size() ? word.size() - c.size() : c.size() - word.size();
    if (gap > limit) continue;
    size_t d = edit_distance(lower, to_lower(c));
    if (!best || d < best_d) {
      best = c;
      best_d = d;
    }
  }
  if (best && best_d <= limit) return best;
  return std::nullopt;
}

std::string to_upper(std::string_view text) {
  std::string s(text);
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
std::string to_lower(std::string_view text) {
  std::string s(text);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::size_t utf8_char(std::string_view s, std::size_t i, char32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  const std::size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  cp = c & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

namespace {

void hex_byte(std::string& out, unsigned char u) {
  static const char* hex = "0123456789abcdef";
  out += "\\x";
  out += hex[u >> 4];
  out += hex[u & 15];
}

/// `controls`: control characters as \xNN too; `lines`: but line breaks and tabs.
std::string escaped(std::string_view text, bool controls, bool lines = false) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    const std::size_t n = utf8_char(text, i, cp);
    if (n == 0) {
      hex_byte(out, static_cast<unsigned char>(text[i++]));
      continue;
    }
    if (controls && n == 1 && (cp < 0x20 || cp == 0x7F) && !(lines && (cp == '\n' || cp == '\t')))
      hex_byte(out, static_cast<unsigned char>(cp));
    else out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace

std::string printable(std::string_view text) { return escaped(text, true); }

std::string printable_lines(std::string_view text) { return escaped(text, true, true); }

std::string cut(std::string_view value, std::size_t keep) {
  if (value.size() <= keep) return printable(value);
  std::size_t n = keep;
  // Back up over UTF-8 continuation bytes so the kept part stays valid text.
  while (n > 0 && (static_cast<unsigned char>(value[n]) & 0xC0) == 0x80) --n;
  return printable(value.substr(0, n)) + "\u2026 (" + std::to_string(value.size()) + " bytes)";
}

std::string column(std::string_view word, std::size_t width) {
  return std::string(word) + std::string(word.size() < width ? width - word.size() : 1, ' ');
}

std::string human_size(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

}  // namespace opforge::strings
