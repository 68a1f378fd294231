// probe::OverlayMachine: an environment overlay reaches every child, and argv[0] is looked up on
// the overlay's PATH, not on opforge's own.
#include "probe/overlay_environment.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include "probe/fake_machine.h"

namespace opforge::probe {
namespace {

TEST(ProbeOverlay, ACommandWithoutItsOwnEnvironmentGetsTheMachines) {
  FakeMachine fm;
  fm.env.set("PATH", "/usr/bin");
  fm.env.set("DS_BUILD_AIO", "1");
  fm.proc.on({"true"}, ProcessResult{.exit_code = 0});
  OverlayMachine seen(fm.machine(), {{"DS_BUILD_OPS", "0"}}, [](const std::string& n) { return n == "DS_BUILD_AIO"; });
  auto m = seen.machine();
  ASSERT_TRUE(m.proc.run(Command{.argv = {"true"}}));
  ASSERT_TRUE(m.proc.run(Command{.argv = {"true"}, .env = std::map<std::string, std::string>{{"ONLY", "this"}}}));
  ASSERT_EQ(fm.proc.calls().size(), 2u);
  EXPECT_EQ(fm.proc.calls()[0].env, (std::map<std::string, std::string>{{"DS_BUILD_OPS", "0"}, {"PATH", "/usr/bin"}}));
  EXPECT_EQ(fm.proc.calls()[1].env, (std::map<std::string, std::string>{{"ONLY", "this"}}));
}

TEST(ProbeOverlay, TheRealRunnerLooksArgv0UpOnTheOverlaysPath) {
  // A program on no folder of this process's PATH, only on the overlay's.
  char dir_template[] = "/tmp/opforge-overlay-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::filesystem::path dir = dir_template;
  auto real = real_machine();
  ASSERT_TRUE(real.fs.write_file_atomic(dir / "opforge-overlay-probe", "#!/bin/sh\necho \"$SEEN\"\n", 0755));
  OverlayMachine seen(real, {{"PATH", dir.string() + ":/usr/bin:/bin"}, {"SEEN", "from the overlay"}});
  auto r = seen.machine().proc.run(Command{.argv = {"opforge-overlay-probe"}});
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->out, "from the overlay\n");
  EXPECT_FALSE(real.proc.run(Command{.argv = {"opforge-overlay-probe"}})) << "not on this process's PATH";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace opforge::probe
