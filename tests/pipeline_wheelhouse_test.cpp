#include <gtest/gtest.h>

#include "pipeline/wheelhouse.h"
#include "probe/fake_machine.h"
#include "test_util.h"

namespace opforge::pipeline {
namespace {

using test_util::data;

std::vector<SummaryRow> two_rows() {
  return {{"torch2.15.0-py3.11",
           "t-0.1.0+cu132torch215-py3-none-any.whl",
           std::string(64, '2'),
           {"scale", "extra"},
           "CUDA 13.2 (PyPI: cuda-toolkit[nvcc,cudart,cccl]==13.2.2)",
           "2.15.0+cu132",
           40.0},
          {"torch2.14.0-py3.11",
           "t-0.1.0+cu130torch214-py3-none-any.whl",
           std::string(64, '1'),
           {"scale"},
           "CUDA 13.0 (/usr/local/cuda-13.0)",
           "2.14.0+cu130",
           12.34}};
}

TEST(PipelineWheelhouse, SummaryMarkdownIsExactly) {
  EXPECT_EQ(summary_markdown(two_rows()), data("index/SUMMARY.md"));
}

TEST(PipelineWheelhouse, SummaryJsonRoundTrips) {
  probe::FakeMachine w;
  w.fs.add_file("/dist/summary.json", summary_json(two_rows()));
  auto rows = read_summary(w.fs, "/dist");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].cell, "torch2.14.0-py3.11");
  EXPECT_EQ(rows[1].ops, (std::vector<std::string>{"scale", "extra"}));
  EXPECT_DOUBLE_EQ(rows[0].seconds, 12.3);
}

TEST(PipelineWheelhouse, LandingReplacesTheCellsRowAndDropsVanishedWheels) {
  probe::FakeMachine w;
  auto rows = two_rows();
  w.fs.add_file("/dist/" + rows[0].wheel, "w215");
  w.fs.add_file("/dist/summary.json", summary_json(rows));  // the 2.14 wheel is gone from the folder
  SummaryRow again = rows[0];
  again.seconds = 3;
  ASSERT_TRUE(land(w.fs, "/dist", again));
  auto now = read_summary(w.fs, "/dist");
  ASSERT_EQ(now.size(), 1u);
  EXPECT_DOUBLE_EQ(now[0].seconds, 3);
  EXPECT_EQ(*w.fs.read_file("/dist/SUMMARY.md"), summary_markdown(now));
  EXPECT_EQ(w.fs.type_of("/dist/simple/t/index.html"), probe::FileType::regular);
}

TEST(PipelineWheelhouse, OneRowPerWheelNotPerCell) {
  // Two projects built without [matrix] land in one dist/: both are cell "default".
  probe::FakeMachine w;
  SummaryRow a{"default", "a_ops-0.1.0+cpu-py3-none-any.whl", std::string(64, 'a'), {"x"}, "", "", 1};
  SummaryRow b{"default", "b_ops-0.1.0+cpu-py3-none-any.whl", std::string(64, 'b'), {"y"}, "", "", 2};
  w.fs.add_file("/dist/" + a.wheel, "a");
  w.fs.add_file("/dist/" + b.wheel, "b");
  ASSERT_TRUE(land(w.fs, "/dist", a));
  ASSERT_TRUE(land(w.fs, "/dist", b));
  auto rows = read_summary(w.fs, "/dist");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].wheel, a.wheel);
  EXPECT_EQ(rows[1].wheel, b.wheel);
}

TEST(PipelineWheelhouse, MergeRefusesAFolderThatIsNotThere) {
  probe::FakeMachine w;
  auto r = merge_wheelhouse(w.machine(), "/out", {"/nowhere"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
}

}  // namespace
}  // namespace opforge::pipeline
