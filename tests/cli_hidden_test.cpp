// The command table's hidden rows (src/cli/hidden.cpp: `__nvcc`, `__host`, `__host-compile`, what
// opforge's wrapper scripts run), on the real binary: dispatched from the table with their
// arguments unparsed, and invisible to people: not in help, never a "did you mean".
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "test_util.h"

namespace {

namespace fs = std::filesystem;

struct HiddenRun {
  int exit_code = -1;
  std::string out, err;
};

HiddenRun run_opforge(const std::string& args) {
  const fs::path dir = opforge::test_util::temp_dir("cli-hidden");
  const std::string cmd = "cd '" + dir.string() + "' && env -i PATH=/usr/bin:/bin HOME='" + dir.string() + "' '" +
                          OPFORGE_BINARY + "' " + args + " >stdout.txt 2>stderr.txt";
  const int status = std::system(cmd.c_str());
  HiddenRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = opforge::test_util::slurp(dir / "stdout.txt");
  r.err = opforge::test_util::slurp(dir / "stderr.txt");
  return r;
}

TEST(CliHidden, EachRowRunsWithItsArgumentsUnparsed) {
  // Flags of opforge's own (--version, --help) are a wrapped compiler's arguments here.
  auto r = run_opforge("__host-compile --version");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "opforge: __host-compile: --compiler PATH -- ARGS... expected (the host wrappers run this)\n");
  EXPECT_EQ(r.out, "");
  r = run_opforge("__nvcc --help");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "opforge: the nvcc wrapper's rule --help cannot be read: --help: no such file\n"
            "  hint: build again: opforge writes it with its wrapper\n");
  r = run_opforge("__host");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "opforge __host: usage: opforge __host RULE [ARGS...]\n");
  r = run_opforge("__nvcc");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "opforge __nvcc: usage: opforge __nvcc RULE [ARGS...]\n");
}

TEST(CliHidden, HelpNamesNoHiddenRow) {
  for (const char* args : {"help", "--help"}) {
    SCOPED_TRACE(args);
    const auto r = run_opforge(args);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("\n  build "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("__"), std::string::npos) << r.out;
  }
  const auto r = run_opforge("help __host");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "opforge: error: unknown command '__host'\n  hint: `opforge help` lists them\n");
}

TEST(CliHidden, NoDidYouMeanToAHiddenRow) {
  for (const char* name : {"__hots", "__nvc", "_host", "__host-compil"}) {
    SCOPED_TRACE(name);
    const auto r = run_opforge(name);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "opforge: error: unknown command '" + std::string(name) + "'\n");
  }
  // A visible command is still suggested.
  EXPECT_EQ(run_opforge("buidl").err, "opforge: error: unknown command 'buidl'; did you mean 'build'?\n");
}

}  // namespace
