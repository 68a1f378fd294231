#include "util/error.h"

namespace opforge {

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
  out += message;
  if (!where.source_line.empty()) {
    out += "\n  " + where.source_line + "\n  ";
    // Tabs stay tabs so the caret lines up under the same column in a terminal.
    for (int i = 1; i < where.column && i - 1 < static_cast<int>(where.source_line.size()); ++i)
      out += where.source_line[i - 1] == '\t' ? '\t' : ' ';
    out += "^";
  }
  if (!hint.empty()) out += "\n  hint: " + hint;
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
