#pragma once
/// A build's steps as they start and end: what the CLI's progress display is made of. Native builds
/// report ninja's steps (one per compile, link, strip), command builds one per op compiled alone and
/// one for the command itself.
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace opforge::compile {

struct StepEvent {
  enum class Kind { started, finished };
  Kind kind = Kind::started;
  std::string what;     ///< "c++ overflow/stats_cpu.cpp", "op cpu_adam", "python setup.py bdist_wheel"
  int done = 0;         ///< steps finished, this one included when it finished
  int total = 0;        ///< steps this build runs (0: unknown)
  double seconds = -1;  ///< finished: how long it ran; -1 when its start was not seen
  bool ok = true;       ///< finished: whether it succeeded
};

using StepSink = std::function<void(const StepEvent&)>;

/// A native build's "[3/8] c++ a.cpp" ninja line, or a command build's torch ninja line
/// "[3/8] c++ -MMD ... -c a.cpp -o build/a.o": the line itself for the former, "[3/8] a.o" for the
/// latter; empty when `line` is not a ninja progress line. Reads the line once, with no regex
/// (compiler output is unbounded).
std::string short_ninja_line(std::string_view line);

/// ninja's status format opforge sets (NINJA_STATUS), whatever the user's is: started, finished
/// and total edges, then the description. Read back by NinjaStatusReader.
inline constexpr const char* kNinjaStatus = "opforge-ninja %s %f %t: ";

/// Reads ninja's output, run on a terminal with NINJA_STATUS = kNinjaStatus: each status line
/// ("\r<status><description>\x1b[K", printed as a step starts and as it ends) becomes a StepEvent,
/// the rest is passed on as lines. What it passes on reads as ninja's output in a pipe: a finished
/// step as "[f/t] description", then the step's own output. Lines without the status (ninja in a
/// pipe, or not ninja) are passed on unchanged.
class NinjaStatusReader {
 public:
  using Clock = std::function<double()>;  ///< seconds on a monotonic clock
  NinjaStatusReader(StepSink on_step, std::function<void(std::string_view)> on_line, Clock clock = {});
  /// One line of ninja's output, without its '\n'.
  void line(std::string_view raw);
  /// Steps that finished (ninja's own count, as the last status said).
  int finished() const { return finished_; }

 private:
  void status(std::string_view text);
  StepSink on_step_;
  std::function<void(std::string_view)> on_line_;
  Clock clock_;
  int started_ = 0, finished_ = 0;
  std::vector<std::pair<std::string, double>> running_;  ///< description, start time
};

}  // namespace opforge::compile
