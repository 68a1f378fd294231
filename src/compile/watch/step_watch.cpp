#include "compile/watch/step_watch.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "plan/jobs.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace opforge::compile {

namespace fs = std::filesystem;

namespace {

bool is_source(std::string_view w) {
  for (std::string_view s : {".cu", ".cpp", ".cc", ".cxx", ".c"})
    if (w.size() > s.size() && w.ends_with(s)) return true;
  return false;
}

std::uint64_t status_value(std::string_view status, std::string_view key) {
  for (auto& line : strings::split(status, '\n'))
    if (line.starts_with(key)) {
      auto words = strings::split(std::string(strings::trim(line.substr(key.size()))), ' ');
      if (!words.empty())
        if (auto n = numbers::parse_int<std::uint64_t>(words.front())) return *n;
    }
  return 0;
}

}  // namespace

std::vector<ProcessView> list_processes(const probe::FileSystem& fs, const fs::path& proc) {
  std::vector<ProcessView> out;
  auto names = fs.list_directory(proc);
  if (!names) return out;
  for (auto& n : *names) {
    auto pid = numbers::parse_int<int>(n);
    if (!pid) continue;
    auto status = fs.read_file(proc / n / "status");
    auto cmdline = fs.read_file(proc / n / "cmdline");
    if (!status || !cmdline) continue;  // ended meanwhile
    ProcessView p;
    p.pid = *pid;
    p.ppid = static_cast<int>(status_value(*status, "PPid:"));
    p.rss_kib = status_value(*status, "VmRSS:");
    p.argv = strings::split(*cmdline, '\0');
    while (!p.argv.empty() && p.argv.back().empty()) p.argv.pop_back();
    if (auto cwd = fs.read_symlink(proc / n / "cwd")) p.cwd = cwd->string();
    out.push_back(std::move(p));
  }
  return out;
}

StepWatch::StepWatch(fs::path tree, std::vector<std::string> marks)
    : tree_(tree.lexically_normal().string()), marks_(std::move(marks)) {
  while (tree_.size() > 1 && tree_.back() == '/') tree_.pop_back();
}

std::string StepWatch::source_of(const ProcessView& p) const {
  // `sh -c "nvcc … -c /tree/x.cu -o …"` (ninja) holds the command in one argument: its words.
  std::vector<std::string> words;
  for (auto& a : p.argv)
    for (auto& w : strings::split(a, ' '))
      if (!w.empty()) words.push_back(w);
  for (std::size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i] != "-c" || !is_source(words[i + 1])) continue;
    const fs::path f(words[i + 1]);
    const std::string abs = f.is_absolute() ? f.lexically_normal().string()
                            : p.cwd.empty() ? std::string()
                                            : (fs::path(p.cwd) / f).lexically_normal().string();
    if (abs.size() > tree_.size() + 1 && abs.starts_with(tree_ + "/")) return abs.substr(tree_.size() + 1);
  }
  return {};
}

void StepWatch::observe(const std::vector<ProcessView>& processes, double now_s) {
  std::map<int, const ProcessView*> by_pid;
  std::map<int, std::vector<int>> children;
  for (auto& p : processes) {
    by_pid[p.pid] = &p;
    children[p.ppid].push_back(p.pid);
  }
  std::map<int, std::string> sources;
  for (auto& p : processes)
    if (auto s = source_of(p); !s.empty()) sources[p.pid] = s;
  for (auto& [pid, source] : sources) {
    bool nested = false;
    std::set<int> visited;  // a pid reused mid-read cannot make the walk endless
    for (int up = by_pid[pid]->ppid; up > 0 && visited.insert(up).second;) {
      if (auto it = sources.find(up); it != sources.end() && it->second == source) {
        nested = true;
        break;
      }
      auto it = by_pid.find(up);
      if (it == by_pid.end()) break;
      up = it->second->ppid;
    }
    if (nested) continue;
    std::uint64_t rss = 0;
    bool marked = false;
    std::vector<int> todo = {pid};
    std::set<int> done;
    while (!todo.empty()) {
      const int q = todo.back();
      todo.pop_back();
      if (!done.insert(q).second) continue;
      if (auto it = by_pid.find(q); it != by_pid.end()) {
        rss += it->second->rss_kib;
        for (const auto& a : it->second->argv)
          for (const auto& mark : marks_)
            if (a.find(mark) != std::string::npos) marked = true;
      }
      if (auto it = children.find(q); it != children.end())
        todo.insert(todo.end(), it->second.begin(), it->second.end());
    }
    auto [it, fresh] = seen_.try_emplace({pid, source});
    Seen& s = it->second;
    if (fresh) {
      s.step.source = source;
      s.first = now_s;
      s.step.start = now_s;
      s.step.cuda = source.ends_with(".cu");
      s.order = seen_.size();
    }
    s.step.seconds = now_s - s.first;
    s.step.peak_kib = std::max(s.step.peak_kib, rss);
    s.step.wrapped = s.step.wrapped || marked;
  }
}

std::vector<StepPeak> StepWatch::steps() const {
  std::vector<const Seen*> all;
  for (auto& [k, s] : seen_) all.push_back(&s);
  std::sort(all.begin(), all.end(), [](auto* a, auto* b) { return a->order < b->order; });
  std::vector<StepPeak> out;
  for (auto* s : all) out.push_back(s->step);
  return out;
}

struct StepWatchThread::State {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  StepWatch watch;
  std::jthread thread;
  State(fs::path tree, std::vector<std::string> marks) : watch(std::move(tree), std::move(marks)) {}
};

StepWatchThread::StepWatchThread(const probe::FileSystem& fs, fs::path tree, int period_ms,
                                 std::function<void(std::uint64_t)> on_peak, std::vector<std::string> marks)
    : state_(std::make_unique<State>(std::move(tree), std::move(marks))) {
  State* s = state_.get();
  s->thread = std::jthread([s, &fs, period_ms, on_peak = std::move(on_peak)] {
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t told = 0;
    std::unique_lock lock(s->mu);
    while (!s->stop) {
      lock.unlock();
      auto processes = list_processes(fs);
      const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      lock.lock();
      s->watch.observe(processes, now);
      if (on_peak) {
        std::uint64_t peak = 0;
        for (auto& step : s->watch.steps()) peak = std::max(peak, step.peak_kib);
        if (peak > told + told / 20) {
          told = peak;
          lock.unlock();
          on_peak(peak);
          lock.lock();
        }
      }
      s->cv.wait_for(lock, std::chrono::milliseconds(period_ms), [s] { return s->stop; });
    }
  });
}

std::vector<StepPeak> StepWatchThread::finish() {
  if (!state_) return {};
  {
    std::lock_guard lock(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_all();
  if (state_->thread.joinable()) state_->thread.join();
  return state_->watch.steps();
}

StepWatchThread::~StepWatchThread() { (void)finish(); }

std::vector<std::string> unwrapped_cuda_steps(const std::vector<StepPeak>& steps) {
  std::vector<std::string> out;
  for (const auto& s : steps)
    if (s.cuda && !s.wrapped) out.push_back(s.source);
  return out;
}

int most_at_once(const std::vector<StepPeak>& steps) {
  // Starts before ends at one instant: two steps seen in the same observation overlap.
  std::vector<std::pair<double, int>> events;
  for (const auto& s : steps) {
    events.emplace_back(s.start, 0);
    events.emplace_back(s.start + s.seconds, 1);
  }
  std::sort(events.begin(), events.end());
  int now = 0, most = 0;
  for (const auto& [t, kind] : events) {
    now += kind == 0 ? 1 : -1;
    most = std::max(most, now);
  }
  return most;
}

std::string steps_said(const std::vector<StepPeak>& steps, unsigned jobs) {
  const int most = most_at_once(steps);
  std::string out = "memory: " + std::to_string(steps.size()) + " compile steps, " + std::to_string(most) + " at once" +
                    (most < static_cast<int>(jobs) ? " (" + std::to_string(jobs) + " allowed)" : "") +
                    "; the heaviest " + heaviest_steps(steps, 3);
  if (most == 1 && jobs > 1 && steps.size() > 1) {
    double total = 0;
    for (const auto& s : steps) total += s.seconds;
    // torch's BuildExtension compiles through ninja (MAX_JOBS at once) only with use_ninja and a
    // ninja on PATH; setuptools' own path compiles one source after another.
    out +=
        "\n  the project compiled one file at a time, whatever MAX_JOBS says (setuptools without ninja: torch's "
        "BuildExtension with use_ninja=False, or no ninja on PATH): its steps took " +
        std::to_string(static_cast<long>(total + 0.5)) + " s, about " +
        std::to_string(static_cast<long>(total / jobs + 0.5)) + " s at " + std::to_string(jobs) + " at once";
  }
  return out;
}

std::string heaviest_steps(std::vector<StepPeak> steps, std::size_t n) {
  std::stable_sort(steps.begin(), steps.end(), [](auto& a, auto& b) { return a.peak_kib > b.peak_kib; });
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < steps.size() && i < n; ++i)
    parts.push_back(fs::path(steps[i].source).filename().string() + " " + plan::gib(steps[i].peak_kib) + " (" +
                    std::to_string(static_cast<long>(steps[i].seconds + 0.5)) + " s)");
  return strings::join(parts, ", ");
}

}  // namespace opforge::compile
