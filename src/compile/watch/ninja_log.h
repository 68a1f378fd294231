#pragma once
/// The `.ninja_log` files a command build's ninja runs (torch's BuildExtension) leave in the scratch
/// tree: which compile steps finished, and when. A resumed build compares them before and after its
/// command to count the steps it reused and those it compiled.
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "probe/machine.h"

namespace opforge::compile {

/// One finished step of a ninja log: its output and the line that records it (start and end in ms
/// since that ninja run began, the output's mtime, the command's hash).
struct NinjaStep {
  int start_ms = 0;
  int end_ms = 0;
  std::string line;
};

/// Every `.ninja_log` under `tree` (symbolic links are not followed; 16 folders deep at most):
/// the log's path relative to `tree` → output (relative to `tree` when inside it) → its last entry
/// (ninja appends; a later line of the same output replaces the earlier).
using NinjaLogs = std::map<std::string, std::map<std::string, NinjaStep>>;
NinjaLogs read_ninja_logs(const probe::FileSystem& fs, const std::filesystem::path& tree);

/// One log's text (v5 to v7: "start\tend\tmtime\toutput\thash" lines after a "# ninja log" header).
std::map<std::string, NinjaStep> parse_ninja_log(std::string_view text);

/// What a build's command did with the steps ninja had finished before it: `reused` steps
/// finished before and not run again, `compiled` steps that finished in this run (new or run again).
struct StepReuse {
  int reused = 0;
  int compiled = 0;
  /// Each step compiled in this run: its output and its wall seconds (ninja's).
  std::vector<std::pair<std::string, double>> times;
};
StepReuse compare_ninja_logs(const NinjaLogs& before, const NinjaLogs& after);

}  // namespace opforge::compile
