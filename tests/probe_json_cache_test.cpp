// The cache files of probe/: keyed JSON entries, and the remembered output of a program's
// version query, on the fake machine.
#include "probe/json_cache.h"

#include <gtest/gtest.h>

#include "probe/fake_machine.h"

namespace opforge::probe {
namespace {

ProcessResult said(std::string out) {
  ProcessResult r;
  r.exit_code = 0;
  r.out = std::move(out);
  return r;
}

struct RunRemembered : ::testing::Test {
  FakeMachine fm;
  Command version{.argv = {"/usr/bin/tool", "--version"}};
  void SetUp() override {
    fm.env.set("OPFORGE_CACHE_DIR", "/cache");
    fm.fs.add_file("/opt/tool-1.2/bin/tool", "binary v1", 0755);
    fm.fs.add_symlink("/usr/bin/tool", "/opt/tool-1.2/bin/tool");
    fm.proc.on({"/usr/bin/tool"}, said("tool 1.2\n"));
  }
};

TEST_F(RunRemembered, ASecondQueryOfTheSameProgramRunsNothing) {
  auto first = run_remembered(fm.machine(), version);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->out, "tool 1.2\n");
  auto again = run_remembered(fm.machine(), version);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->ok());
  EXPECT_EQ(again->out, "tool 1.2\n");
  EXPECT_EQ(fm.proc.calls().size(), 1u);
  EXPECT_EQ(fm.fs.log(), (std::vector<std::string>{"mkdir /cache", "write /cache/versions.json"}));
}

TEST_F(RunRemembered, AProgramReplacedInPlaceIsAskedAgain) {
  ASSERT_TRUE(run_remembered(fm.machine(), version));
  fm.fs.add_file("/opt/tool-1.2/bin/tool", "binary v2, upgraded", 0755);
  fm.proc.on({"/usr/bin/tool"}, said("tool 1.3\n"));
  auto after = run_remembered(fm.machine(), version);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->out, "tool 1.3\n");
  EXPECT_EQ(fm.proc.calls().size(), 2u);
}

TEST_F(RunRemembered, FailuresAreNotRememberedAndOtherArgumentsAreOtherQuestions) {
  ProcessResult broken;
  broken.exit_code = 1;
  fm.proc.on({"/usr/bin/tool", "--broken"}, broken);
  Command bad{.argv = {"/usr/bin/tool", "--broken"}};
  ASSERT_TRUE(run_remembered(fm.machine(), bad));
  ASSERT_TRUE(run_remembered(fm.machine(), bad));
  ASSERT_TRUE(run_remembered(fm.machine(), version));
  EXPECT_EQ(fm.proc.calls().size(), 3u);
}

TEST_F(RunRemembered, WithoutACacheFolderOrWithItsOwnEnvironmentItAlwaysRuns) {
  Command own = version;
  own.env = std::map<std::string, std::string>{{"LANG", "C"}};
  ASSERT_TRUE(run_remembered(fm.machine(), own));
  ASSERT_TRUE(run_remembered(fm.machine(), own));
  fm.env.unset("OPFORGE_CACHE_DIR");
  ASSERT_TRUE(run_remembered(fm.machine(), version));
  ASSERT_TRUE(run_remembered(fm.machine(), version));
  EXPECT_EQ(fm.proc.calls().size(), 4u);
  EXPECT_TRUE(fm.fs.log().empty());
}

TEST(JsonCache, ADamagedFileIsAMissAndIsReplacedOnTheNextStore) {
  FakeFileSystem fs;
  fs.add_file("/c/x.json", "{not json");
  JsonCache cache(fs, "/c/x.json");
  EXPECT_EQ(cache.find("k"), nullptr);
  cache.store("k", {{"v", 1}});
  JsonCache reread(fs, "/c/x.json");
  ASSERT_NE(reread.find("k"), nullptr);
  EXPECT_EQ((*reread.find("k"))["v"], 1);
}

}  // namespace
}  // namespace opforge::probe
