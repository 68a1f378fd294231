#pragma once
/// A tiny fork-join helper shared by the CPU ops: threads are started per call and joined before
/// returning. It replaces OpenMP, whose libgomp.so.1 no manylinux policy allows in a wheel; at the
/// sizes where threading pays (megabytes), starting a thread costs far less than the work.
#include <sched.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <thread>
#include <vector>

namespace opforge_kernels {

/// Threads to use when the caller says 0: OPFORGE_NUM_THREADS if set, else the CPUs this process
/// may run on (its affinity mask, so taskset and container limits are honoured).
inline int default_threads() {
  if (const char* env = std::getenv("OPFORGE_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}

/// Calls fn(begin, end) over [0, n) split into contiguous ranges, one per thread; ranges are
/// multiples of `grain` (except the last) so SIMD loops see whole vectors. The calling thread
/// takes the first range. Runs inline when one thread suffices.
template <typename Fn>
void parallel_for(std::size_t n, std::size_t grain, int threads, Fn&& fn) {
  if (threads <= 0) threads = default_threads();
  if (grain == 0) grain = 1;
  std::size_t units = (n + grain - 1) / grain;
  std::size_t t = std::min<std::size_t>(static_cast<std::size_t>(threads), units);
  if (t <= 1) {
    if (n) fn(std::size_t{0}, n);
    return;
  }
  std::size_t per = (units + t - 1) / t * grain;
  std::vector<std::thread> workers;
  workers.reserve(t - 1);
  for (std::size_t i = 1; i < t; ++i) {
    std::size_t b = i * per, e = std::min(n, b + per);
    if (b >= e) break;
    workers.emplace_back([&fn, b, e] { fn(b, e); });
  }
  fn(std::size_t{0}, std::min(n, per));
  for (auto& w : workers) w.join();
}

}  // namespace opforge_kernels
