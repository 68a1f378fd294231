#pragma once
/// The compile steps of a command build seen from outside (the project's own build runs them):
/// each step's wall time and peak memory, sampled from /proc while the command runs. torch's ninja,
/// setuptools and a project's own scripts all start one process per source file, which is all this
/// needs; what it measures is the memory the job count must leave room for.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "probe/machine.h"

namespace opforge::compile {

/// One process as /proc shows it.
struct ProcessView {
  int pid = 0;
  int ppid = 0;
  std::uint64_t rss_kib = 0;      ///< VmRSS
  std::vector<std::string> argv;  ///< /proc/<pid>/cmdline
  std::string cwd;                ///< /proc/<pid>/cwd's target; empty when unreadable
};

/// Every process under `proc` (/proc); one that ends while it is read is left out.
std::vector<ProcessView> list_processes(const probe::FileSystem& fs, const std::filesystem::path& proc = "/proc");

/// One compile step: the source it compiled (relative to the tree), its wall seconds (from the
/// first to the last observation that saw it) and its peak (the largest sum of the resident memory
/// of its processes at one observation; a spike shorter than the sampling period can be missed).
struct StepPeak {
  std::string source;
  double seconds = 0;
  double start = 0;  ///< the first observation that saw it, on the watch's clock
  std::uint64_t peak_kib = 0;
  bool cuda = false;     ///< it compiled a .cu file
  bool wrapped = false;  ///< one of its processes named a wrapper mark (StepWatch's `marks`)
};

/// Accumulates observations of the processes. A step is a process whose command line compiles one
/// source file of `tree` (`-c <file>`, the file absolute under `tree`, or relative with the
/// process's working folder in it) and none of whose ancestors compiles the same file (the
/// `sh -c` ninja starts, not the nvcc inside it), with every process below it: nvcc's cicc and
/// ptxas, the host compiler's cc1plus.
///
/// `marks` are what opforge's compiler wrappers leave on a command line (the wrapper's path,
/// `__nvcc`): a step none of whose processes named one, seen in any observation, compiled without
/// them.
class StepWatch {
 public:
  explicit StepWatch(std::filesystem::path tree, std::vector<std::string> marks = {});
  void observe(const std::vector<ProcessView>& processes, double now_s);
  /// The steps seen, in the order they were first seen.
  std::vector<StepPeak> steps() const;

 private:
  struct Seen {
    StepPeak step;
    double first = 0;
    std::size_t order = 0;
  };
  std::string tree_;
  std::vector<std::string> marks_;
  std::map<std::pair<int, std::string>, Seen> seen_;
  std::string source_of(const ProcessView& p) const;
};

/// A StepWatch observing list_processes(fs) every `period_ms` on a thread of its own, from its
/// construction until finish() (or its destruction). `on_peak` (on that thread) is told the largest
/// peak seen so far each time it grows by more than a twentieth: a build killed half-way has
/// passed on what it measured.
class StepWatchThread {
 public:
  StepWatchThread(const probe::FileSystem& fs, std::filesystem::path tree, int period_ms = 250,
                  std::function<void(std::uint64_t kib)> on_peak = {}, std::vector<std::string> marks = {});
  ~StepWatchThread();
  StepWatchThread(const StepWatchThread&) = delete;
  StepWatchThread& operator=(const StepWatchThread&) = delete;
  std::vector<StepPeak> finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// The CUDA steps that compiled without the wrappers (StepPeak::wrapped false), their sources.
std::vector<std::string> unwrapped_cuda_steps(const std::vector<StepPeak>& steps);

/// The most steps that ran at one time, as observed (steps seen in one observation overlap).
int most_at_once(const std::vector<StepPeak>& steps);

/// The summary's line of a command build's compile steps, from what ran: how many, the most at
/// once (and the jobs allowed when fewer ran), the heaviest three; and, when a project that was
/// allowed several compiled one file at a time, a second line saying so and what it cost.
std::string steps_said(const std::vector<StepPeak>& steps, unsigned jobs);

/// "flash_fwd_hdim128_bf16_sm80.cu 4.8 GiB (312 s), …": the `n` steps of largest peak, largest first.
std::string heaviest_steps(std::vector<StepPeak> steps, std::size_t n);

}  // namespace opforge::compile
