// A command build's wheel against the plan's GPU code: none at all, fewer, others, or code that a
// CPU-only recipe did not ask for are refused with what is missing, where, and why.
#include <gtest/gtest.h>

#include "pipeline/pipeline.h"
#include "pipeline/stages.h"

using namespace opforge;
using pipeline::GpuCodePromise;
using pipeline::GpuCodeSeen;

namespace {

/// A command build of a project with two CUDA sources, planned for 9.0.
plan::Plan project_plan() {
  plan::Plan p;
  p.source.catalogue = plan::Catalogue::none;
  p.arch.arches = {target::Arch{9, 0}};
  p.project_files.cuda_sources = 2;
  p.project_files.cuda_source_sample = {"csrc/a.cu", "csrc/b.cu"};
  p.project_files.switches = {
      {"FORCE_CUDA", "setup.py", 12, "if os.environ.get(\"FORCE_CUDA\", \"0\") == \"1\":", false, false}};
  return p;
}

GpuCodeSeen seen(std::map<std::string, std::vector<std::string>> by_library, std::size_t libraries) {
  return {.by_library = std::move(by_library),
          .libraries = libraries,
          .wrapper_saw_nvcc = false,
          .env = {},
          .wheel = "/b/normalized/x-1.0-cp311-cp311-linux_x86_64.whl",
          .log = "/b/command.log"};
}

}  // namespace

TEST(PipelineGpuCode, WhatEachPlanPromises) {
  auto p = project_plan();
  auto promise = pipeline::gpu_code_promise(p);
  EXPECT_EQ(promise.kind, GpuCodePromise::Kind::exactly);
  EXPECT_EQ(promise.targets, (std::vector<std::string>{"sm_90"}));
  EXPECT_EQ(promise.why, "the project has 2 CUDA sources (csrc/a.cu, csrc/b.cu)");

  p.recipe.arch.enforce = false;
  EXPECT_EQ(pipeline::gpu_code_promise(p).kind, GpuCodePromise::Kind::some);

  auto cpu = project_plan();
  cpu.project_files.cuda_sources = 0;  // a project with no CUDA source
  EXPECT_EQ(pipeline::gpu_code_promise(cpu).kind, GpuCodePromise::Kind::unchecked);

  auto none = project_plan();
  none.arch.arches.clear();
  none.arch.source = std::string(plan::kNoGpuCodeSource);
  EXPECT_EQ(pipeline::gpu_code_promise(none).kind, GpuCodePromise::Kind::none);

  auto ops = project_plan();  // an op tree: GPU code only from its CUDA ops
  ops.source.catalogue = plan::Catalogue::op_builder;
  ops::Decision cpu_adam;
  cpu_adam.manifest.name = "cpu_adam";
  cpu_adam.manifest.kind = ops::Kind::cpu;
  cpu_adam.status = ops::OpStatus::build;
  ops.ops = {cpu_adam};
  EXPECT_EQ(pipeline::gpu_code_promise(ops).kind, GpuCodePromise::Kind::unchecked);
  ops::Decision fused = cpu_adam;
  fused.manifest.name = "fused_adam";
  fused.manifest.kind = ops::Kind::cuda;
  ops.ops.push_back(fused);
  EXPECT_EQ(pipeline::gpu_code_promise(ops).why, "CUDA ops are built (fused_adam)");
}

TEST(PipelineGpuCode, AWheelWithoutGpuCodeIsRefusedNamingTheProjectsSwitch) {
  const auto p = project_plan();
  auto r = pipeline::check_gpu_code(p, pipeline::gpu_code_promise(p), seen({}, 2));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::failed);
  EXPECT_EQ(r.error().message,
            "the wheel holds no GPU code, and the plan is sm_90 (arch list 9.0; the project has 2 CUDA sources "
            "(csrc/a.cu, csrc/b.cu)): 2 libraries in the wheel, none with a fatbinary");
  EXPECT_EQ(r.error().hint,
            "the project's build files read this switch (projects like this compile CUDA only when told to, or when "
            "they see a GPU):\n"
            "    FORCE_CUDA, setup.py:12 (if os.environ.get(\"FORCE_CUDA\", \"0\") == \"1\":): [build.env] FORCE_CUDA "
            "= \"1\"\n"
            "  for a wheel without GPU code on purpose: [arch] list = \"none\"\n"
            "  the refused wheel: /b/normalized/x-1.0-cp311-cp311-linux_x86_64.whl (`opforge inspect` it); the "
            "build's output: /b/command.log");
  // enforce = false keeps the project's own list, but some GPU code all the same.
  auto kept = p;
  kept.recipe.arch.enforce = false;
  EXPECT_FALSE(pipeline::check_gpu_code(kept, pipeline::gpu_code_promise(kept), seen({}, 2)));
  EXPECT_TRUE(pipeline::check_gpu_code(kept, pipeline::gpu_code_promise(kept), seen({{"a.so", {"sm_80"}}}, 2)));
}

TEST(PipelineGpuCode, OtherArchitecturesAreRefusedPerLibraryWithTheCause) {
  const auto p = project_plan();
  auto r = pipeline::check_gpu_code(p, pipeline::gpu_code_promise(p), seen({{"proj/_C.so", {"sm_80"}}}, 1));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "the wheel's GPU code is not the plan's sm_90 (arch list 9.0): missing sm_90; not planned sm_80\n"
            "  proj/_C.so: sm_80\n"
            "  the project's nvcc did not run through opforge's wrapper (it saw no nvcc command), so the "
            "project's own -gencode/-arch options were compiled");
  EXPECT_EQ(r.error().hint,
            "[arch] enforce = false keeps a project's own list on purpose; the refused wheel: "
            "/b/normalized/x-1.0-cp311-cp311-linux_x86_64.whl (`opforge inspect` it); the build's output: "
            "/b/command.log");
}

TEST(PipelineGpuCode, ThePlansCodeInAnyLibraryPasses) {
  auto p = project_plan();
  p.arch.arches = {target::Arch{9, 0}, target::Arch{9, 0, 'a'}};
  const auto promise = pipeline::gpu_code_promise(p);
  // An sm_90a-only library beside a plain one (a fatbinary names sm_90a's code sm_90).
  EXPECT_TRUE(pipeline::check_gpu_code(p, promise, seen({{"a.so", {"sm_90"}}, {"b.so", {"sm_90"}}}, 3)));
  // Fewer in the wheel as a whole: refused.
  p.arch.arches = {target::Arch{8, 0}, target::Arch{9, 0}};
  auto r = pipeline::check_gpu_code(p, pipeline::gpu_code_promise(p), seen({{"a.so", {"sm_90"}}}, 1));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("missing sm_80\n"), std::string::npos) << r.error().message;
}

TEST(PipelineGpuCode, ACpuOnlyRecipeRefusesGpuCode) {
  auto p = project_plan();
  p.arch.arches.clear();
  p.arch.source = std::string(plan::kNoGpuCodeSource);
  const auto promise = pipeline::gpu_code_promise(p);
  EXPECT_TRUE(pipeline::check_gpu_code(p, promise, seen({}, 2)));
  auto r = pipeline::check_gpu_code(p, promise, seen({{"proj/_C.so", {"sm_90", "compute_90"}}}, 2));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "the wheel holds GPU code (compute_90 sm_90 in proj/_C.so), and the recipe says none ([arch] list = "
            "\"none\")");
}
