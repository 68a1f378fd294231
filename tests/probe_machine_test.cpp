#include <gtest/gtest.h>

#include <chrono>

#include "probe/fake_machine.h"

namespace opforge::probe {
namespace {

TEST(ProbeRealProcess, CapturesOutputAndExitCode) {
  auto m = real_machine();
  auto r = m.proc.run(Command{.argv = {"sh", "-c", "echo out; echo err >&2; exit 3"}});
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
}

TEST(ProbeRealProcess, MissingProgramIsAnError) {
  auto m = real_machine();
  auto r = m.proc.run(Command{.argv = {"opforge-no-such-program"}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "cannot run 'opforge-no-such-program': not found on PATH");
}

TEST(ProbeRealProcess, TimeoutKills) {
  auto m = real_machine();
  const auto start = std::chrono::steady_clock::now();
  auto r = m.proc.run(Command{.argv = {"sleep", "5"}, .timeout = std::chrono::milliseconds(100)});
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->timed_out);
  // Killed at the timeout, not reaped when `sleep` ends by itself: far below its 5 s even on a
  // loaded machine.
  EXPECT_LT(took, std::chrono::seconds(3));
}

TEST(ProbeRealFileSystem, AtomicWriteLeavesNoTemporary) {
  auto m = real_machine();
  auto dir = m.fs.make_temp_directory("opforge-test-");
  ASSERT_TRUE(dir);
  ASSERT_TRUE(m.fs.write_file_atomic(*dir / "a.txt", "hello", 0644));
  EXPECT_EQ(*m.fs.read_file(*dir / "a.txt"), "hello");
  EXPECT_EQ(*m.fs.list_directory(*dir), std::vector<std::string>{"a.txt"});
  ASSERT_TRUE(m.fs.remove_all(*dir));
}

TEST(ProbeFakeFileSystem, FollowsSymlinks) {
  FakeFileSystem fs;
  fs.add_file("/usr/local/cuda-13.0/bin/nvcc", "#!", 0755);
  fs.add_symlink("/usr/local/cuda", "cuda-13.0");
  EXPECT_TRUE(fs.is_executable("/usr/local/cuda/bin/nvcc"));
  EXPECT_EQ(fs.type_of("/usr/local/cuda"), FileType::symlink);
  EXPECT_EQ(fs.resolved_type("/usr/local/cuda"), FileType::directory);
  EXPECT_EQ(*fs.canonical("/usr/local/cuda/bin"), "/usr/local/cuda-13.0/bin");
  EXPECT_EQ(*fs.list_directory("/usr/local"), (std::vector<std::string>{"cuda", "cuda-13.0"}));
}

TEST(ProbeFindOnPath, FirstMatchWins) {
  FakeFileSystem fs;
  fs.add_file("/a/gcc", "", 0644);  // not executable
  fs.add_file("/b/gcc", "", 0755);
  fs.add_file("/c/gcc", "", 0755);
  EXPECT_EQ(*find_on_path(fs, "gcc", "/a:/b:/c"), "/b/gcc");
  EXPECT_FALSE(find_on_path(fs, "clang", "/a:/b"));
}

}  // namespace
}  // namespace opforge::probe
