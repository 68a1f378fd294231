// probe::wait_for, the one lock-waiting loop, on a fake clock: exact polls, no real sleep.
#include <gtest/gtest.h>

#include "probe/fake_machine.h"
#include "probe/machine.h"

namespace opforge::probe {
namespace {

using namespace std::chrono_literals;

/// Advances when slept on, and remembers each sleep.
class FakeClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point now() const override { return t_; }
  void sleep(std::chrono::milliseconds d) override {
    t_ += d;
    sleeps.push_back(d);
  }
  std::vector<std::chrono::milliseconds> sleeps;

 private:
  std::chrono::steady_clock::time_point t_{};
};

TEST(ProbeLock, GivesUpAfterItsBoundHavingPolledAtItsInterval) {
  FakeFileSystem fs;
  fs.hold_lock("/c/.13.2.lock");
  FakeClock clock;
  int told = 0;
  auto got = wait_for_lock(fs, "/c/.13.2.lock",
                           LockWait{.poll = 1s, .limit = 10s, .on_wait = [&] { ++told; }, .hint = {}, .clock = &clock});
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, ErrorKind::failed);
  EXPECT_EQ(got.error().message, "gave up waiting for /c/.13.2.lock, held by another opforge process");
  EXPECT_EQ(got.error().hint, "see which process holds it: fuser /c/.13.2.lock");
  EXPECT_EQ(clock.sleeps, std::vector<std::chrono::milliseconds>(10, 1s));
  EXPECT_EQ(told, 1);
}

TEST(ProbeLock, TakesTheLockOnceFreedAndSaysItWaitedOnce) {
  FakeClock clock;
  int tries = 0, told = 0;
  auto got = wait_for("/t/x.lock",
                      LockWait{.poll = 250ms, .limit = 2h, .on_wait = [&] { ++told; }, .hint = "h", .clock = &clock},
                      [&]() -> Result<LockAttempt> {
                        if (++tries < 4) return LockAttempt();  // held by another process
                        return LockAttempt(std::make_shared<int>(1));
                      });
  ASSERT_TRUE(got);
  EXPECT_EQ(tries, 4);
  EXPECT_EQ(told, 1);
  EXPECT_EQ(clock.sleeps, std::vector<std::chrono::milliseconds>(3, 250ms));
}

// A lock that cannot be taken at all (a read-only folder) is not waited for.
TEST(ProbeLock, ALockThatCannotBeTakenIsReturnedAtOnce) {
  FakeClock clock;
  int tries = 0;
  auto got = wait_for("/ro/x.lock", LockWait{.clock = &clock}, [&]() -> Result<LockAttempt> {
    ++tries;
    return failure("cannot open the lock file /ro/x.lock: Read-only file system");
  });
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().message, "cannot open the lock file /ro/x.lock: Read-only file system");
  EXPECT_EQ(tries, 1);
  EXPECT_TRUE(clock.sleeps.empty());
}

TEST(ProbeLock, AFreeLockIsTakenWithoutWaiting) {
  FakeFileSystem fs;
  FakeClock clock;
  int told = 0;
  auto got = wait_for_shared_lock(fs, "/c/.e.lock", LockWait{.on_wait = [&] { ++told; }, .clock = &clock});
  ASSERT_TRUE(got);
  EXPECT_TRUE(clock.sleeps.empty());
  EXPECT_EQ(told, 0);
}

}  // namespace
}  // namespace opforge::probe
