#include <thread>

#include "probe/machine.h"

namespace opforge::probe {

namespace {

template <class Try>
Result<LockHandle> wait(const fs::path& path, const std::function<void()>& on_wait, std::chrono::seconds limit,
                        Try try_once) {
  using namespace std::chrono_literals;
  const auto give_up = std::chrono::steady_clock::now() + limit;
  bool said = false;
  for (;;) {
    auto lock = OPFORGE_TRY(try_once());
    if (lock) return *lock;
    if (std::chrono::steady_clock::now() > give_up)
      return failure("gave up waiting for " + path.string() + ", held by another opforge process",
                     "see which process holds it: fuser " + path.string());
    if (!said && on_wait) on_wait();
    said = true;
    std::this_thread::sleep_for(250ms);
  }
}

}  // namespace

Result<std::shared_ptr<void>> wait_for_lock(FileSystem& fs, const fs::path& path, const std::function<void()>& on_wait,
                                            std::chrono::seconds limit) {
  return wait(path, on_wait, limit, [&] { return fs.try_lock(path); });
}

Result<std::shared_ptr<void>> wait_for_shared_lock(FileSystem& fs, const fs::path& path,
                                                   const std::function<void()>& on_wait, std::chrono::seconds limit) {
  return wait(path, on_wait, limit, [&] { return fs.try_lock_shared(path); });
}

}  // namespace opforge::probe
