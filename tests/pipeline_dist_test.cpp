// dist/'s commit protocol, its recovery after a kill at every step, reuse and the lock, on the
// fake machine: each test asserts the exact file-system operations, in order.
#include "pipeline/dist.h"

#include <gtest/gtest.h>

#include "probe/fake_machine.h"
#include "util/hash.h"

namespace opforge::pipeline {
namespace {

namespace fs = std::filesystem;
using probe::FileType;
using V = std::vector<std::string>;

const fs::path kDist = "/d";
const std::string kName = "ops-1.0-py3-none-any.whl";
const fs::path kWheel = kDist / kName;
const std::string kRecord = "/d/" + kName + ".opforge-record.json";

record::Record record_of(std::string_view bytes, const std::string& fingerprint) {
  record::Record r;
  r.wheel = kName;
  r.outputs[kName] = sha256_hex(bytes);
  r.inputs["fingerprint"] = fingerprint;
  return r;
}

/// Forwards everything to a FakeFileSystem; the fakes below change one behaviour each.
class ForwardingFileSystem : public probe::FileSystem {
 public:
  explicit ForwardingFileSystem(probe::FakeFileSystem& fs) : fs_(fs) {}
  FileType type_of(const fs::path& p) const override { return fs_.type_of(p); }
  FileType resolved_type(const fs::path& p) const override { return fs_.resolved_type(p); }
  bool is_executable(const fs::path& p) const override { return fs_.is_executable(p); }
  Result<std::vector<std::string>> list_directory(const fs::path& p) const override { return fs_.list_directory(p); }
  Result<fs::path> read_symlink(const fs::path& p) const override { return fs_.read_symlink(p); }
  Result<fs::path> canonical(const fs::path& p) const override { return fs_.canonical(p); }
  std::optional<probe::FileStamp> stamp(const fs::path& p) const override { return fs_.stamp(p); }
  Status write_file_atomic(const fs::path& p, std::string_view c, unsigned mode) override {
    return fs_.write_file_atomic(p, c, mode);
  }
  Status create_directories(const fs::path& p) override { return fs_.create_directories(p); }
  Status create_symlink(const fs::path& t, const fs::path& p) override { return fs_.create_symlink(t, p); }
  Status rename(const fs::path& from, const fs::path& to) override { return fs_.rename(from, to); }
  Status remove(const fs::path& p) override { return fs_.remove(p); }
  Status remove_all(const fs::path& p) override { return fs_.remove_all(p); }
  Result<fs::path> make_temp_directory(std::string_view prefix) override { return fs_.make_temp_directory(prefix); }

 protected:
  Result<std::string> read_bounded(const fs::path& p, std::uint64_t max) const override {
    return fs_.read_file(p, max);
  }

 private:
  probe::FakeFileSystem& fs_;
};

/// Changes stop after `budget` operations, as if opforge were killed there: every later write,
/// rename or removal fails and changes nothing.
class StoppingFileSystem final : public ForwardingFileSystem {
 public:
  StoppingFileSystem(probe::FakeFileSystem& fs, int budget) : ForwardingFileSystem(fs), budget_(budget) {}
  Status write_file_atomic(const fs::path& p, std::string_view c, unsigned mode) override {
    OPFORGE_CHECK(spend());
    return ForwardingFileSystem::write_file_atomic(p, c, mode);
  }
  Status create_symlink(const fs::path& t, const fs::path& p) override {
    OPFORGE_CHECK(spend());
    return ForwardingFileSystem::create_symlink(t, p);
  }
  Status rename(const fs::path& from, const fs::path& to) override {
    OPFORGE_CHECK(spend());
    return ForwardingFileSystem::rename(from, to);
  }
  Status remove(const fs::path& p) override {
    OPFORGE_CHECK(spend());
    return ForwardingFileSystem::remove(p);
  }
  Status remove_all(const fs::path& p) override {
    OPFORGE_CHECK(spend());
    return ForwardingFileSystem::remove_all(p);
  }

 private:
  Status spend() {
    if (budget_-- <= 0) return failure("killed");
    return {};
  }
  int budget_;
};

/// Names in dist/, sorted.
V listing(const probe::FakeFileSystem& fs) { return fs.list_directory(kDist).value_or(V{}); }

std::string content(const probe::FakeFileSystem& fs, const fs::path& p) { return fs.read_file(p).value_or("<none>"); }

struct Dist : ::testing::Test {
  probe::FakeMachine fm;
  /// A committed pair from an earlier build (wheel "old", fingerprint "fp-old").
  void previous_pair() {
    fm.fs.add_file(kWheel, "old");
    fm.fs.add_file(kRecord, record::render(record_of("old", "fp-old")));
  }
  /// Kills a commit of a new wheel after `done` operations, then recovers: recovery's operations.
  V recovery_after_kill(int done) {
    StoppingFileSystem stopping(fm.fs, done);
    probe::Machine killed{stopping, fm.proc, fm.env, fm.dl};
    EXPECT_FALSE(commit(killed, kWheel, "new", record_of("new", "fp")));
    const auto before = fm.fs.log().size();
    EXPECT_TRUE(recover_dist(fm.machine(), kDist));
    return V(fm.fs.log().begin() + static_cast<long>(before), fm.fs.log().end());
  }
};

TEST_F(Dist, CommitIntoAnEmptyFolderStagesBothFilesThenRenamesWheelThenRecord) {
  ASSERT_TRUE(commit(fm.machine(), kWheel, "new", record_of("new", "fp")));
  EXPECT_EQ(fm.fs.log(), (V{
                             "mkdir /d",
                             "write /d/." + kName + ".opforge-new",
                             "write /d/." + kName + ".opforge-record.json.opforge-new",
                             "rename /d/." + kName + ".opforge-new -> /d/" + kName,
                             "rename /d/." + kName + ".opforge-record.json.opforge-new -> " + kRecord,
                             "remove /d/." + kName + ".opforge-record.json.opforge-old",
                         }));
  EXPECT_EQ(listing(fm.fs), (V{kName, kName + ".opforge-record.json"}));
  EXPECT_EQ(content(fm.fs, kWheel), "new");
}

TEST_F(Dist, CommitOverAPreviousPairMovesItsRecordAsideBeforeTheWheelChanges) {
  previous_pair();
  ASSERT_TRUE(commit(fm.machine(), kWheel, "new", record_of("new", "fp")));
  EXPECT_EQ(fm.fs.log(), (V{
                             "mkdir /d",
                             "write /d/." + kName + ".opforge-new",
                             "write /d/." + kName + ".opforge-record.json.opforge-new",
                             "rename " + kRecord + " -> /d/." + kName + ".opforge-record.json.opforge-old",
                             "rename /d/." + kName + ".opforge-new -> /d/" + kName,
                             "rename /d/." + kName + ".opforge-record.json.opforge-new -> " + kRecord,
                             "remove /d/." + kName + ".opforge-record.json.opforge-old",
                         }));
  EXPECT_EQ(listing(fm.fs), (V{kName, kName + ".opforge-record.json"}));
}

/// Kills the commit after each of its operations in turn, recovers, and checks that dist/ holds
/// exactly one consistent pair (the old one or the new one) and no temporaries.
TEST_F(Dist, AKillAfterAnyStepRecoversToTheOldPairOrTheNewPair) {
  int total = 0;
  {
    probe::FakeMachine count;
    count.fs.add_file(kWheel, "old");
    count.fs.add_file(kRecord, record::render(record_of("old", "fp-old")));
    ASSERT_TRUE(commit(count.machine(), kWheel, "new", record_of("new", "fp")));
    for (const auto& op : count.fs.log()) total += op.starts_with("mkdir ") ? 0 : 1;
  }
  ASSERT_EQ(total, 6);
  for (int done = 0; done <= total; ++done) {
    SCOPED_TRACE("killed after " + std::to_string(done) + " operations");
    probe::FakeMachine fm2;
    fm2.fs.add_file(kWheel, "old");
    fm2.fs.add_file(kRecord, record::render(record_of("old", "fp-old")));
    StoppingFileSystem stopping(fm2.fs, done);
    probe::Machine killed{stopping, fm2.proc, fm2.env, fm2.dl};
    auto committed = commit(killed, kWheel, "new", record_of("new", "fp"));
    EXPECT_EQ(committed.has_value(), done == total);

    ASSERT_TRUE(recover_dist(fm2.machine(), kDist));
    EXPECT_EQ(listing(fm2.fs), (V{kName, kName + ".opforge-record.json"}));
    const std::string wheel = content(fm2.fs, kWheel);
    // Up to the wheel's rename the old pair stands; from then on the new one does.
    EXPECT_EQ(wheel, done >= 4 ? "new" : "old");
    auto rec = record::parse(kRecord, content(fm2.fs, kRecord));
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->outputs.at(kName), sha256_hex(wheel));
    EXPECT_EQ(rec->fingerprint, wheel == "new" ? "fp" : "fp-old");
  }
}

TEST_F(Dist, RecoveryFinishesACommitKilledBetweenTheTwoRenames) {
  previous_pair();
  // both written, old record aside, wheel renamed
  EXPECT_EQ(recovery_after_kill(4), (V{
                                        "rename /d/." + kName + ".opforge-record.json.opforge-new -> " + kRecord,
                                        "remove /d/." + kName + ".opforge-record.json.opforge-old",
                                    }));
}

TEST_F(Dist, RecoveryPutsThePreviousRecordBackWhenTheNewWheelNeverLanded) {
  previous_pair();
  // both written, old record aside, wheel not renamed
  EXPECT_EQ(recovery_after_kill(3), (V{
                                        "rename /d/." + kName + ".opforge-record.json.opforge-old -> " + kRecord,
                                        "remove /d/." + kName + ".opforge-new",
                                        "remove /d/." + kName + ".opforge-record.json.opforge-new",
                                    }));
}

TEST_F(Dist, RecoveryRemovesOnlyTheTemporariesOpforgeMakes) {
  previous_pair();
  fm.fs.add_file("/d/.keep", "user's");
  fm.fs.add_file("/d/.other.whl.opforge-new", "stale");
  fm.fs.add_file("/d/." + kName + ".tmp-1234", "partial write");
  fm.fs.add_file("/d/notes.opforge-new", "not hidden: not ours");
  ASSERT_TRUE(recover_dist(fm.machine(), kDist));
  EXPECT_EQ(fm.fs.log(), (V{"remove /d/." + kName + ".tmp-1234", "remove /d/.other.whl.opforge-new"}));
  EXPECT_EQ(listing(fm.fs), (V{".keep", "notes.opforge-new", kName, kName + ".opforge-record.json"}));
}

TEST_F(Dist, RecoveryOfAMissingFolderDoesNothing) {
  ASSERT_TRUE(recover_dist(fm.machine(), kDist));
  EXPECT_TRUE(fm.fs.log().empty());
}

TEST_F(Dist, AWheelIsReusedOnlyWhenItsRecordHasTheSameInputsAndItsBytesMatch) {
  previous_pair();
  auto hit = find_reusable(fm.machine(), kDist, kName, "fp-old");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->first, kWheel);
  EXPECT_EQ(hit->second.fingerprint, "fp-old");
  EXPECT_FALSE(find_reusable(fm.machine(), kDist, kName, "fp-other"));      // other inputs
  EXPECT_FALSE(find_reusable(fm.machine(), kDist, "other.whl", "fp-old"));  // no record of it
  fm.fs.add_file(kWheel, "tampered");
  EXPECT_FALSE(find_reusable(fm.machine(), kDist, kName, "fp-old"));  // bytes changed
  EXPECT_TRUE(fm.fs.log().empty());                                   // reading never writes
}

TEST_F(Dist, ARecordOfAnotherWheelIsNotReused) {
  fm.fs.add_file(kWheel, "old");
  auto rec = record_of("old", "fp-old");
  rec.wheel = "ops-2.0-py3-none-any.whl";
  fm.fs.add_file(kRecord, record::render(rec));
  EXPECT_FALSE(find_reusable(fm.machine(), kDist, kName, "fp-old"));
}

/// A lock held by another build twice, then free.
class BusyLockFileSystem final : public ForwardingFileSystem {
 public:
  using ForwardingFileSystem::ForwardingFileSystem;
  Result<probe::LockAttempt> try_lock(const fs::path& p) override {
    tried.push_back(p.string());
    if (tried.size() <= 2) return probe::LockAttempt();
    return probe::LockAttempt(std::make_shared<int>(0));
  }
  V tried;
};

/// Advances when slept on: the lock tests never sleep.
class StepClock final : public probe::Clock {
 public:
  std::chrono::steady_clock::time_point now() const override { return t_; }
  void sleep(std::chrono::milliseconds d) override {
    t_ += d;
    ++sleeps;
  }
  int sleeps = 0;

 private:
  std::chrono::steady_clock::time_point t_{};
};

TEST_F(Dist, TheLockWaitsForAnotherBuildAndSaysSoOnce) {
  BusyLockFileSystem busy(fm.fs);
  probe::Machine m{busy, fm.proc, fm.env, fm.dl};
  V lines;
  StepClock clock;
  auto lock = lock_dist(
      m, kDist, [&](std::string_view l) { lines.emplace_back(l); }, &clock);
  EXPECT_EQ(clock.sleeps, 2);
  ASSERT_TRUE(lock);
  EXPECT_EQ(busy.tried, (V{"/d/.opforge-dist.lock", "/d/.opforge-dist.lock", "/d/.opforge-dist.lock"}));
  EXPECT_EQ(lines, (V{"waiting for another build's commit into /d (it holds .opforge-dist.lock)"}));
  EXPECT_EQ(fm.fs.log(), (V{"mkdir /d"}));
}

// A holder that never lets go: 10 minutes of 50 ms polls, then a failure that says what to do.
TEST_F(Dist, TheLockGivesUpAfterTenMinutes) {
  fm.fs.hold_lock("/d/.opforge-dist.lock");
  StepClock clock;
  V lines;
  auto lock = lock_dist(
      fm.machine(), kDist, [&](std::string_view l) { lines.emplace_back(l); }, &clock);
  ASSERT_FALSE(lock);
  EXPECT_EQ(clock.sleeps, 10 * 60 * 20);
  EXPECT_EQ(lines.size(), 1u);
  EXPECT_EQ(lock.error().render(),
            "gave up waiting for /d/.opforge-dist.lock, held by another opforge process\n"
            "  hint: a commit takes seconds: if no opforge build is running, remove the lock file");
}

/// A lock that cannot be taken at all (a read-only dist/).
class ReadOnlyLockFileSystem final : public ForwardingFileSystem {
 public:
  using ForwardingFileSystem::ForwardingFileSystem;
  Result<probe::LockAttempt> try_lock(const fs::path& p) override {
    ++tries;
    return failure("cannot open the lock file " + p.string() + ": Read-only file system");
  }
  int tries = 0;
};

TEST_F(Dist, ALockThatCannotBeTakenFailsAtOnceNamingTheFolder) {
  ReadOnlyLockFileSystem ro(fm.fs);
  probe::Machine m{ro, fm.proc, fm.env, fm.dl};
  V lines;
  auto lock = lock_dist(m, kDist, [&](std::string_view l) { lines.emplace_back(l); });
  ASSERT_FALSE(lock);
  EXPECT_EQ(ro.tries, 1);
  EXPECT_TRUE(lines.empty());  // nothing claims another build is committing
  EXPECT_EQ(lock.error().render(),
            "cannot open the lock file /d/.opforge-dist.lock: Read-only file system\n"
            "  hint: opforge commits wheels into /d: make it writable, or name another folder");
}

}  // namespace
}  // namespace opforge::pipeline
