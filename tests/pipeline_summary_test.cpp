// The build summary: one line per op of the plan, from its decisions and the compile steps.
#include <gtest/gtest.h>

#include "pipeline/pipeline.h"
#include "pipeline/stages.h"

using namespace opforge;

namespace {

ops::Decision decision(const std::string& name, ops::OpStatus status, const std::string& reason) {
  ops::Decision d;
  d.manifest.name = name;
  d.status = status;
  d.reason = reason;
  return d;
}

}  // namespace

TEST(PipelineSummary, OneLinePerOpWithStatusReasonAndSeconds) {
  plan::Plan p;
  // As the plan has them before the build (apply_op_steps then marks "broken" failed).
  p.ops = {decision("broken", ops::OpStatus::build, "compatible"),
           decision("good", ops::OpStatus::build, "compatible (is_compatible())"),
           decision("kernels", ops::OpStatus::skipped, "its extension cannot be constructed: no dskernels"),
           decision("other", ops::OpStatus::not_requested, "")};
  std::vector<compile::OpStep> steps = {
      {.op = "broken", .status = compile::OpStatus::failed, .first_error = "k.cu:5: error: x", .seconds = 2.5},
      {.op = "good", .status = compile::OpStatus::built, .seconds = 4.0}};
  auto lines = pipeline::op_summary(p, steps);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].status, ops::OpStatus::failed);
  EXPECT_EQ(lines[0].reason, "k.cu:5: error: x");
  EXPECT_EQ(lines[0].seconds, 2.5);
  EXPECT_EQ(lines[1].status, ops::OpStatus::built);
  EXPECT_EQ(lines[1].reason, "");
  EXPECT_EQ(lines[1].seconds, 4.0);
  EXPECT_EQ(lines[2].status, ops::OpStatus::skipped);
  EXPECT_EQ(lines[2].reason, "its extension cannot be constructed: no dskernels");
  EXPECT_EQ(lines[2].seconds, -1);
  EXPECT_EQ(lines[3].status, ops::OpStatus::not_requested);
  EXPECT_EQ(lines[3].reason, "");
}

TEST(PipelineSummary, AppliedStepsMarkTheDecisionsBuiltOrFailed) {
  plan::Plan p;
  p.ops = {decision("broken", ops::OpStatus::build, "compatible"), decision("good", ops::OpStatus::build, "compatible"),
           decision("kernels", ops::OpStatus::skipped, "no dskernels"),
           decision("other", ops::OpStatus::not_requested, "")};
  pipeline::apply_op_steps(
      p, {{.op = "broken", .status = compile::OpStatus::failed, .first_error = "k.cu:5: error: x", .log = "/b/x.log"},
          {.op = "good", .status = compile::OpStatus::built}});
  EXPECT_EQ(p.ops[0].said(), "failed: k.cu:5: error: x (log: /b/x.log)");
  EXPECT_EQ(p.ops[1].said(), "built: compatible");
  EXPECT_EQ(p.ops[2].said(), "skipped: no dskernels");
  EXPECT_EQ(p.ops[3].said(), "not requested");
  EXPECT_FALSE(p.ops[0].builds());
  EXPECT_TRUE(p.ops[1].builds());
}

TEST(PipelineSummary, EveryStatusHasOneSpellingThatReadsBack) {
  for (auto s : {ops::OpStatus::build, ops::OpStatus::built, ops::OpStatus::skipped, ops::OpStatus::failed,
                 ops::OpStatus::not_requested})
    EXPECT_EQ(ops::status_from_name(ops::status_name(s)), s);
  EXPECT_EQ(ops::status_name(ops::OpStatus::not_requested), std::string("not requested"));
  EXPECT_EQ(ops::status_from_name("skip"), std::nullopt);
}
