// Progress: ninja's status lines read back (captured from ninja 1.11.1 on a pseudo-terminal with
// NINJA_STATUS="opforge-ninja %s %f %t: ", tests/data/ninja/), and ninja lines shortened.
#include "compile/watch/progress.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace opforge::compile {
namespace {

struct Seen {
  std::vector<std::string> lines;
  std::vector<std::string> events;  ///< "started c++ ops/a.cpp 0/3", "finished ... 1/3 2.0"
};

void read_all(const std::string& text, Seen& seen) {
  double now = 0;
  NinjaStatusReader reader(
      [&](const StepEvent& e) {
        std::string s = (e.kind == StepEvent::Kind::started ? "started " : "finished ") + e.what + " " +
                        std::to_string(e.done) + "/" + std::to_string(e.total);
        if (e.kind == StepEvent::Kind::finished) s += " " + std::to_string(static_cast<int>(e.seconds));
        seen.events.push_back(s);
      },
      [&](std::string_view l) { seen.lines.emplace_back(l); }, [&] { return now += 1; });
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    reader.line(std::string_view(text).substr(start, nl - start));
  EXPECT_EQ(reader.finished(), 3);
}

TEST(CompileProgress, ReadsNinjasTerminalStatusAsStepsStartingAndEnding) {
  Seen seen;
  read_all(test_util::data("ninja/terminal-1.11.1.txt"), seen);
  EXPECT_EQ(seen.events, (std::vector<std::string>{
                             "started c++ ops/a.cpp 0/3",
                             "finished c++ ops/a.cpp 1/3 1",
                             "started link libopforge_a.so 1/3",
                             "finished link libopforge_a.so 2/3 1",
                             "started c++ ops/b.cpp 2/3",
                             "finished c++ ops/b.cpp 3/3 1",
                         }));
  // What is passed on reads as ninja in a pipe: FAILED uncoloured, at the start of its line.
  EXPECT_EQ(seen.lines, (std::vector<std::string>{
                            "[1/3] c++ ops/a.cpp",
                            "a.cpp:1: warning: something",
                            "[2/3] link libopforge_a.so",
                            "[3/3] c++ ops/b.cpp",
                            "FAILED: b.o ",
                            "echo \"b.cpp:2:5: error: nope\"; exit 1",
                            "b.cpp:2:5: error: nope",
                            "ninja: build stopped: cannot make progress due to previous errors.",
                        }));
}

TEST(CompileProgress, PipeOutputPassesUnchanged) {
  Seen seen;
  double now = 0;
  NinjaStatusReader reader(
      nullptr, [&](std::string_view l) { seen.lines.emplace_back(l); }, [&] { return now; });
  for (auto l : {"[1/2] c++ a.cpp", "", "opforge-ninja x: not a status", "FAILED: b.o"}) reader.line(l);
  EXPECT_EQ(seen.lines,
            (std::vector<std::string>{"[1/2] c++ a.cpp", "", "opforge-ninja x: not a status", "FAILED: b.o"}));
  EXPECT_EQ(reader.finished(), 0);
}

// Without a terminal (no /dev/pts) ninja prints the same status only as each step ends.
TEST(CompileProgress, StatusFromAPipeIsEndsOnly) {
  Seen seen;
  double now = 0;
  NinjaStatusReader reader(
      [&](const StepEvent& e) {
        seen.events.push_back((e.kind == StepEvent::Kind::started ? "started " : "finished ") + e.what + " " +
                              std::to_string(e.done) + "/" + std::to_string(e.total));
      },
      [&](std::string_view l) { seen.lines.emplace_back(l); }, [&] { return now; });
  for (auto l : {"opforge-ninja 2 1 3: c++ a.cpp", "opforge-ninja 3 2 3: c++ b.cpp", "opforge-ninja 3 3 3: link a.so"})
    reader.line(l);
  EXPECT_EQ(seen.events,
            (std::vector<std::string>{"finished c++ a.cpp 1/3", "finished c++ b.cpp 2/3", "finished link a.so 3/3"}));
  EXPECT_EQ(seen.lines, (std::vector<std::string>{"[1/3] c++ a.cpp", "[2/3] c++ b.cpp", "[3/3] link a.so"}));
}

TEST(CompileProgress, ShortNinjaLine) {
  EXPECT_EQ(short_ninja_line("[3/8] c++ overflow/a.cpp"), "[3/8] c++ overflow/a.cpp");
  EXPECT_EQ(short_ninja_line("[3/8] c++ -MMD -MF x.d -c /t/a.cpp -o /t/build/a.o -O3"), "[3/8] a.o");
  EXPECT_EQ(short_ninja_line("[3/8] /usr/bin/nvcc -c x.cu -o build/x.cuda.o"), "[3/8] x.cuda.o");
  EXPECT_EQ(short_ninja_line("[3/8]c++"), "");
  EXPECT_EQ(short_ninja_line("[/8] c++"), "");
  EXPECT_EQ(short_ninja_line("[38] c++"), "");
  EXPECT_EQ(short_ninja_line("warning: [1/2] x -o y"), "");
  EXPECT_EQ(short_ninja_line(std::string(100000, '[')), "");
}

}  // namespace
}  // namespace opforge::compile
