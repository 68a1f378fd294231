// `opforge plan RECIPE --nodes a.json b.json`: the nodes' GPU kinds make the arch list.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace {

std::string run(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  *rc = WEXITSTATUS(pclose(p));
  return out;
}

TEST(CliPlanNodes, UnionOfNodeGpusBecomesTheArchList) {
  int rc = 0;
  std::string data = OPFORGE_TEST_DATA;
  auto out =
      run(std::string("env -u TORCH_CUDA_ARCH_LIST ") + OPFORGE_BINARY + " plan " + OPFORGE_SOURCE_DIR +
              "/recipes/default.toml --json --nodes " + data + "/nodes/a100.json " + data + "/nodes/found_h100.json",
          &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("8.0;9.0+PTX"), std::string::npos) << out;
  EXPECT_NE(out.find("mixed"), std::string::npos) << "expected a mixed-generation warning:\n" << out;
}

TEST(CliPlanNodes, ReportsWithoutGpusAreExit3) {
  int rc = 0;
  auto out = run(std::string(OPFORGE_BINARY) + " plan " + OPFORGE_SOURCE_DIR + "/recipes/default.toml --nodes " +
                     OPFORGE_TEST_DATA + "/nodes/none.json",
                 &rc);
  EXPECT_EQ(rc, 3) << out;
  EXPECT_NE(out.find("no GPU in any of the 1 node reports"), std::string::npos) << out;
}

// A `python -m opforge_ops.nodecheck --json` report lists every GPU of the cluster under "gpus" in
// doctor's shape, so one report stands for all its nodes. nodecheck_cpu.json is a real report of a
// CPU-only run here; nodecheck_h100_a100.json is the same report with the GPU fields as a run on an
// H100 node and an A100 node fills them.
TEST(CliPlanNodes, AcceptsANodecheckReport) {
  int rc = 0;
  auto out = run(std::string("env -u TORCH_CUDA_ARCH_LIST ") + OPFORGE_BINARY + " plan " + OPFORGE_SOURCE_DIR +
                     "/recipes/default.toml --json --nodes " + OPFORGE_TEST_DATA + "/nodes/nodecheck_h100_a100.json",
                 &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("8.0;9.0+PTX"), std::string::npos) << out;
  EXPECT_NE(out.find("mixed"), std::string::npos) << out;
}

TEST(CliPlanNodes, ANodecheckReportWithoutGpusIsExit3) {
  int rc = 0;
  auto out = run(std::string(OPFORGE_BINARY) + " plan " + OPFORGE_SOURCE_DIR + "/recipes/default.toml --nodes " +
                     OPFORGE_TEST_DATA + "/nodes/nodecheck_cpu.json",
                 &rc);
  EXPECT_EQ(rc, 3) << out;
  EXPECT_NE(out.find("no GPU in any of the 1 node reports"), std::string::npos) << out;
}

}  // namespace
