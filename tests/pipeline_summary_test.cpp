// The build summary: one line per op of the plan, from its decisions and the compile steps.
#include <gtest/gtest.h>

#include "pipeline/pipeline.h"

using namespace opforge;

namespace {

ops::Decision decision(const std::string& name, bool build, const std::string& reason) {
  ops::Decision d;
  d.manifest.name = name;
  d.build = build;
  d.reason = reason;
  return d;
}

}  // namespace

TEST(PipelineSummary, OneLinePerOpWithStatusReasonAndSeconds) {
  plan::Plan p;
  p.ops = {decision("broken", false, "failed: k.cu:5: error: x (log: /b/ops/broken.log)"),
           decision("good", true, "compatible (is_compatible())"),
           decision("kernels", false, "skipped: its extension cannot be constructed: no dskernels"),
           decision("other", false, "not requested")};
  p.ops[3].requested = false;
  p.ops[2].detail = "its extension cannot be constructed: no dskernels";  // as ops::decide writes it
  std::vector<compile::OpStep> steps = {
      {.op = "broken", .status = compile::OpStatus::failed, .first_error = "k.cu:5: error: x", .seconds = 2.5},
      {.op = "good", .status = compile::OpStatus::built, .seconds = 4.0}};
  auto lines = pipeline::op_summary(p, steps);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].status, "failed");
  EXPECT_EQ(lines[0].reason, "k.cu:5: error: x");
  EXPECT_EQ(lines[0].seconds, 2.5);
  EXPECT_EQ(lines[1].status, "built");
  EXPECT_EQ(lines[1].reason, "");
  EXPECT_EQ(lines[1].seconds, 4.0);
  EXPECT_EQ(lines[2].status, "skipped");
  EXPECT_EQ(lines[2].reason, "its extension cannot be constructed: no dskernels");
  EXPECT_EQ(lines[2].seconds, -1);
  EXPECT_EQ(lines[3].status, "not requested");
  EXPECT_EQ(lines[3].reason, "");
}
