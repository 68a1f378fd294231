// The real process runner's stdin, line output and timeout, on real programs (sh, cat, sleep).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "probe/machine.h"

namespace opforge::probe {
namespace {

TEST(ProbeProcess, StdinTextReachesTheChild) {
  auto r = real_machine().proc.run(Command{.argv = {"cat"}, .stdin_text = std::string("first\nsecond")});
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->out, "first\nsecond");
}

TEST(ProbeProcess, LinesMergeStderrInOrderAndKeepTheLastPartialLine) {
  std::vector<std::string> seen;
  auto r = real_machine().proc.run(Command{
      .argv = {"sh", "-c", "echo one; echo two >&2; printf three"},
      .output = Output::lines,
      .on_line = [&](std::string_view line) { seen.emplace_back(line); },
  });
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(seen, (std::vector<std::string>{"one", "two", "three"}));
  EXPECT_EQ(r->out, "one\ntwo\nthree");
  EXPECT_EQ(r->err, "");
}

TEST(ProbeProcess, TimeoutKillsAndSaysSo) {
  auto start = std::chrono::steady_clock::now();
  auto r = real_machine().proc.run(Command{.argv = {"sleep", "30"}, .timeout = std::chrono::milliseconds(200)});
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_TRUE(r->timed_out);
  EXPECT_FALSE(r->ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace opforge::probe
