// The real process runner's stdin, line output and timeout, on real programs (sh, cat, sleep).
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "probe/line_splitter.h"
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

// A pipe holds 64 KiB: cat writes its output back before it has read all of its input, so the
// runner must read while it writes.
TEST(ProbeProcess, OneMebibyteOfStdinEchoedBackByCat) {
  std::string input;
  for (int i = 0; input.size() < (1u << 20); ++i) input += "line " + std::to_string(i) + "\n";
  auto r = real_machine().proc.run(Command{.argv = {"cat"}, .stdin_text = input, .timeout = std::chrono::seconds(60)});
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->out.size(), input.size());
  EXPECT_TRUE(r->out == input);
}

TEST(ProbeProcess, ACommandThatIgnoresItsStdinEndsCleanly) {
  // `true` exits without reading: the rest of stdin meets a closed pipe (EPIPE, not SIGPIPE).
  auto r = real_machine().proc.run(Command{.argv = {"true"}, .stdin_text = std::string(1 << 20, 'x')});
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->exit_code, 0);
}

// terminal = true: stdout and stderr are one pseudo-terminal (ninja then prints as each step
// starts), without '\r\n' translation; the last output before the command ends is not lost.
TEST(ProbeProcess, TerminalOutputIsATtyWithPlainLineEnds) {
  std::vector<std::string> seen;
  auto r = real_machine().proc.run(Command{
      .argv = {"sh", "-c", "test -t 1 && echo out-tty; test -t 2 && echo err-tty >&2; printf last"},
      .output = Output::lines,
      .on_line = [&](std::string_view line) { seen.emplace_back(line); },
      .terminal = true,
  });
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(seen, (std::vector<std::string>{"out-tty", "err-tty", "last"}));
  EXPECT_EQ(r->out, "out-tty\nerr-tty\nlast");
}

// The splitting itself, fed chunk by chunk as reads deliver them (no timing involved): a line cut
// across reads is joined, empty lines are kept, the last line needs no newline.
TEST(ProbeProcess, LinesAreSplitAcrossReadsAndKeepEmptyOnes) {
  std::vector<std::string> seen;
  Command lines{
      .argv = {}, .output = Output::lines, .on_line = [&](std::string_view line) { seen.emplace_back(line); }};
  LineSplitter split(lines);
  for (std::string_view chunk : {"a", "b\n\nc", "d\ne\n", "f"}) split.feed(chunk);
  EXPECT_EQ(seen, (std::vector<std::string>{"ab", "", "cd", "e"}));
  split.finish();
  EXPECT_EQ(seen, (std::vector<std::string>{"ab", "", "cd", "e", "f"}));
  // On a terminal: '\r' ends a piece too (empty ones dropped), and a redrawn status line ending in
  // erase-to-end-of-line is passed on when drawn.
  seen.clear();
  Command tty = lines;
  tty.terminal = true;
  LineSplitter status(tty);
  for (std::string_view chunk : {"[1/3] x\x1b[K", "\r[2/3", "] y\x1b[K", "\r\rdone\n"}) status.feed(chunk);
  status.finish();
  EXPECT_EQ(seen, (std::vector<std::string>{"[1/3] x\x1b[K", "[2/3] y\x1b[K", "done"}));
  // Without Output::lines nothing is called.
  seen.clear();
  LineSplitter none(Command{.argv = {}});
  none.feed("a\nb\n");
  none.finish();
  EXPECT_TRUE(seen.empty());
}

// The same through a real process: what it prints reaches on_line and the captured output.
TEST(ProbeProcess, LinesOfARealProcess) {
  std::vector<std::string> seen;
  auto r = real_machine().proc.run(Command{
      .argv = {"sh", "-c", "printf 'ab\\n\\ncd\\ne'"},
      .output = Output::lines,
      .on_line = [&](std::string_view line) { seen.emplace_back(line); },
  });
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(seen, (std::vector<std::string>{"ab", "", "cd", "e"}));
  EXPECT_EQ(r->out, "ab\n\ncd\ne");
}

TEST(ProbeProcess, CaptureKeepsStdoutAndStderrApart) {
  auto r = real_machine().proc.run(Command{.argv = {"sh", "-c", "echo out; echo err >&2"}});
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
}

bool process_gone(const std::string& pid) {
  // A killed grandchild is reparented and reaped; until then it is a zombie ('Z').
  for (int i = 0; i < 250; ++i) {
    std::ifstream stat("/proc/" + pid + "/stat");
    std::string line;
    if (!stat || !std::getline(stat, line)) return true;
    auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(ProbeProcess, TimeoutKillsTheCommandAndItsChildren) {
  // The background sleep keeps stdout open after sh is gone, and sh waits for it.
  auto r = real_machine().proc.run(
      Command{.argv = {"sh", "-c", "sleep 30 & echo $!; wait"}, .timeout = std::chrono::milliseconds(300)});
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->signal, SIGKILL);
  std::string grandchild = r->out.substr(0, r->out.find('\n'));
  ASSERT_FALSE(grandchild.empty());
  EXPECT_TRUE(process_gone(grandchild)) << "sleep " << grandchild << " outlived the timeout";
}

TEST(ProbeProcess, TimeoutAlsoHoldsWhenOutputIsInherited) {
  auto r = real_machine().proc.run(
      Command{.argv = {"sleep", "30"}, .output = Output::inherit, .timeout = std::chrono::milliseconds(200)});
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_TRUE(r->timed_out);
}

TEST(ProbeProcess, ExitCodesAndSignalsAreReported) {
  auto exited = real_machine().proc.run(Command{.argv = {"sh", "-c", "exit 3"}});
  ASSERT_TRUE(exited) << exited.error().render();
  EXPECT_EQ(exited->exit_code, 3);
  EXPECT_EQ(exited->signal, 0);
  EXPECT_FALSE(exited->timed_out);

  auto killed = real_machine().proc.run(Command{.argv = {"sh", "-c", "kill -TERM $$"}});
  ASSERT_TRUE(killed) << killed.error().render();
  EXPECT_EQ(killed->exit_code, -1);
  EXPECT_EQ(killed->signal, SIGTERM);
  EXPECT_FALSE(killed->ok());
}

TEST(ProbeProcess, AMissingProgramIsAnErrorNotAResult) {
  auto r = real_machine().proc.run(Command{.argv = {"opforge-no-such-program"}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not found on PATH"), std::string::npos) << r.error().render();
}

TEST(ProbeProcess, PeakResidentMemoryOfTheLargestProcessInTheTree) {
  // A grandchild (sh → python3) touches 256 MiB: the kernel's ru_maxrss of the finished child
  // holds the largest process it waited for.
  auto r = real_machine().proc.run(Command{
      .argv = {"sh", "-c", "python3 -c 'b = bytearray(256 * 1024 * 1024); b[::4096] = b\"x\" * len(b[::4096])'"},
      .timeout = std::chrono::seconds(60)});
  ASSERT_TRUE(r) << r.error().render();
  ASSERT_EQ(r->exit_code, 0) << r->err;
  EXPECT_GE(r->peak_rss_kib, 256 * 1024);
  EXPECT_LT(r->peak_rss_kib, 1024 * 1024);
  auto small = real_machine().proc.run(Command{.argv = {"true"}});
  ASSERT_TRUE(small);
  EXPECT_GT(small->peak_rss_kib, 0);
  EXPECT_LT(small->peak_rss_kib, 128 * 1024);
}

}  // namespace
}  // namespace opforge::probe
