#pragma once
/// The line splitting of a running command's output (probe::Command's Output::lines), apart from
/// the process plumbing so that tests feed it chunks as reads deliver them.
#include <functional>
#include <string>
#include <string_view>

#include "probe/machine.h"

namespace opforge::probe {

/// Hands each complete line of the output to `on_line` (with Output::lines); the last line needs
/// no newline.
/// On a terminal (Command::terminal) a line also ends at '\r' (empty pieces dropped) and as soon
/// as it ends with erase-to-end-of-line (ESC [ K): a status line redrawn in place, which gets no
/// '\n' until something else is printed, is passed on when it is drawn, not when it is replaced.
class LineSplitter {
 public:
  explicit LineSplitter(const Command& command)
      : on_line_(command.output == Output::lines && command.on_line ? &command.on_line : nullptr),
        terminal_(command.terminal) {}
  void feed(std::string_view chunk) {
    if (!on_line_) return;
    pending_.append(chunk);
    size_t start = 0;
    const char* ends = terminal_ ? "\n\r" : "\n";
    for (size_t nl; (nl = pending_.find_first_of(ends, start)) != std::string::npos; start = nl + 1) {
      std::string_view piece = std::string_view(pending_).substr(start, nl - start);
      if (pending_[nl] == '\r' && piece.empty()) continue;
      (*on_line_)(piece);
    }
    pending_.erase(0, start);
    if (terminal_ && std::string_view(pending_).ends_with("\x1b[K")) {
      (*on_line_)(pending_);
      pending_.clear();
    }
  }
  void finish() {
    if (on_line_ && !pending_.empty()) (*on_line_)(pending_);
    pending_.clear();
  }

 private:
  const std::function<void(std::string_view)>* on_line_;
  bool terminal_;
  std::string pending_;
};

}  // namespace opforge::probe
