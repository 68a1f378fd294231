#include "util/error.h"

#include <algorithm>

#include "util/strings.h"

namespace opforge {

namespace {

/// Every line of a message cut to a readable length: the values quoted in messages are cut where
/// they are quoted (strings::cut); this is the net for the ones that are not.
std::string cut_lines(std::string_view text) {
  constexpr std::size_t kLine = 4096;
  // A value a file held (a root's PRETTY_NAME, a report's field) may carry terminal sequences.
  if (text.size() <= kLine) return strings::printable_lines(text);
  std::string out;
  for (auto& line : strings::split(text, '\n')) {
    if (!out.empty()) out += '\n';
    out += strings::cut(line, kLine);
  }
  return out;
}

}  // namespace

std::string Error::render() const {
  std::string out;
  if (!where.file.empty()) {
    out += where.file;
    if (where.line > 0) {
      out += ":" + std::to_string(where.line);
      if (where.column > 0) out += ":" + std::to_string(where.column);
    }
    out += ": ";
  }
  out += cut_lines(message);
  if (!where.source_line.empty()) {
    // A long line is shown as a window around the caret.
    constexpr int kBefore = 80, kWidth = 200;
    std::string_view line = where.source_line;
    int column = where.column;
    std::string shown;
    if (column > kBefore + 1 && line.size() > static_cast<std::size_t>(kWidth)) {
      std::size_t drop = std::min(static_cast<std::size_t>(column - 1 - kBefore), line.size());
      while (drop < line.size() && (static_cast<unsigned char>(line[drop]) & 0xC0) == 0x80) ++drop;
      line.remove_prefix(drop);
      column -= static_cast<int>(drop) - 3;
      shown = "...";
    }
    // Control characters shown as '?', one column each, so the caret stays under its column.
    std::size_t n = std::min(line.size(), static_cast<std::size_t>(kWidth));
    while (n > 0 && n < line.size() && (static_cast<unsigned char>(line[n]) & 0xC0) == 0x80) --n;
    std::string kept(line.substr(0, n));
    for (auto& ch : kept)
      if ((static_cast<unsigned char>(ch) < 0x20 && ch != '\t') || ch == 0x7F) ch = '?';
    shown += kept;
    if (n < line.size()) shown += "\u2026 (" + std::to_string(where.source_line.size()) + " bytes)";
    out += "\n  " + shown + "\n  ";
    // Tabs stay tabs so the caret lines up under the same column in a terminal.
    for (int i = 1; i < column && i - 1 < static_cast<int>(shown.size()); ++i) out += shown[i - 1] == '\t' ? '\t' : ' ';
    out += "^";
  }
  if (!hint.empty()) out += "\n  hint: " + cut_lines(hint);
  return out;
}

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::bad_input: return 2;
    case ErrorKind::unsatisfied: return 3;
    case ErrorKind::failed: return 1;
  }
  return 1;
}

}  // namespace opforge
