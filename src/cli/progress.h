#pragma once
/// How `opforge build` and `opforge verify --allow-run` show a build as it runs. On a terminal
/// (stdout a tty, TERM set and not "dumb"): one line, redrawn every second, naming the step that
/// has run longest of those running now, its seconds, the build's time and done/total, as ninja's
/// status line does. Anywhere else (a pipe, a CI log, TERM=dumb): a line as each step starts and
/// one as it ends, with its seconds, so a stuck step shows. opforge prints no colour (NO_COLOR
/// holds as it is).
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "compile/watch/progress.h"
#include "probe/machine.h"

namespace opforge::cli {

enum class Verbosity {
  quiet,    ///< --quiet: no progress and no build output; errors and the result only
  normal,   ///< the steps, warnings and errors
  verbose,  ///< --verbose: also every line the build prints
};

class ProgressDisplay {
 public:
  /// `terminal`: draw the one status line (else a line per step event).
  ProgressDisplay(Verbosity verbosity, bool command_build, bool terminal);
  ~ProgressDisplay();
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

  /// Whether stdout is a terminal that takes a redrawn line (TERM set, not "dumb").
  static bool stdout_is_terminal(const probe::Environment& env);

  void line(std::string_view text);
  void step(const compile::StepEvent& event);
  /// Clears the status line and stops redrawing: what is printed next starts on a clean line.
  void stop();

 private:
  using Clock = std::chrono::steady_clock;
  void print_line(const std::string& text);  ///< under mu_
  void draw();                               ///< under mu_
  std::string status_text() const;           ///< under mu_

  Verbosity verbosity_;
  bool command_;
  bool terminal_;
  std::mutex mu_;
  std::condition_variable_any tick_;
  Clock::time_point start_ = Clock::now();
  std::vector<std::pair<std::string, Clock::time_point>> running_;
  int done_ = 0, total_ = 0;
  std::string detail_;  ///< the last progress line of a command build's own ninja
  bool drawn_ = false;
  bool stopped_ = false;
  std::jthread ticker_;
};

}  // namespace opforge::cli
