#include <thread>

#include "probe/machine.h"

namespace opforge::probe {

namespace {

class RealClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point now() const override { return std::chrono::steady_clock::now(); }
  void sleep(std::chrono::milliseconds d) override { std::this_thread::sleep_for(d); }
};

}  // namespace

Clock& real_clock() {
  static RealClock clock;
  return clock;
}

Result<LockHandle> wait_for(const fs::path& path, const LockWait& w,
                            const std::function<Result<LockAttempt>()>& try_once) {
  Clock& clock = w.clock ? *w.clock : real_clock();
  const auto give_up = clock.now() + w.limit;
  bool said = false;
  for (;;) {
    // An error is a lock that cannot be taken at all (EACCES, EROFS): only a holder is waited for.
    auto lock = OPFORGE_TRY(try_once());
    if (lock) return *lock;
    if (clock.now() >= give_up)
      return failure("gave up waiting for " + path.string() + ", held by another opforge process",
                     w.hint.empty() ? "see which process holds it: fuser " + path.string() : w.hint);
    if (!said && w.on_wait) w.on_wait();
    said = true;
    clock.sleep(w.poll);
  }
}

Result<LockHandle> wait_for_lock(FileSystem& fs, const fs::path& path, const LockWait& w) {
  return wait_for(path, w, [&] { return fs.try_lock(path); });
}

Result<LockHandle> wait_for_shared_lock(FileSystem& fs, const fs::path& path, const LockWait& w) {
  return wait_for(path, w, [&] { return fs.try_lock_shared(path); });
}

Result<LockHandle> wait_for_lock(FileSystem& fs, const fs::path& path, const std::function<void()>& on_wait,
                                 std::chrono::seconds limit) {
  return wait_for_lock(fs, path, LockWait{.limit = limit, .on_wait = on_wait});
}

Result<LockHandle> wait_for_shared_lock(FileSystem& fs, const fs::path& path, const std::function<void()>& on_wait,
                                        std::chrono::seconds limit) {
  return wait_for_shared_lock(fs, path, LockWait{.limit = limit, .on_wait = on_wait});
}

}  // namespace opforge::probe
