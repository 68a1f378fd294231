// record::recorded_variable is the one list of variables a build records, a record may hold and
// `verify` replays: what the build writes must read back.
#include <gtest/gtest.h>

#include "record/record.h"

namespace opforge::record {
namespace {

TEST(RecordVariables, TheBuildsVariablesAreRecorded) {
  for (const char* name :
       {"DS_BUILD_OPS", "DS_BUILD_AIO", "DS_ACCELERATOR", "DS_ENABLE_NINJA", "DS_SKIP_CUDA_CHECK", "DS_BUILD_STRING",
        "TORCH_CUDA_ARCH_LIST", "CUDA_HOME", "CUDA_PATH", "SOURCE_DATE_EPOCH", "MAX_JOBS", "CFLAGS", "CXXFLAGS",
        "LDFLAGS", "NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS", "CMAKE_ARGS", "SKBUILD_CMAKE_DEFINE"})
    EXPECT_TRUE(recorded_variable(name)) << name;
  for (const char* name : {"LD_PRELOAD", "PATH", "CC", "CXX", "PYTHONPATH", "HOME"})
    EXPECT_FALSE(recorded_variable(name)) << name;
}

TEST(RecordVariables, ARecordOfEveryRecordedVariableReadsBack) {
  Record rec;
  rec.wheel = "opforge_ops-0.1.0-py3-none-linux_x86_64.whl";
  std::map<std::string, std::string> env = {{"DS_BUILD_OPS", "0"},
                                            {"DS_ACCELERATOR", "cuda"},
                                            {"DS_ENABLE_NINJA", "1"},
                                            {"TORCH_CUDA_ARCH_LIST", "8.6"},
                                            {"CUDA_HOME", "/usr/local/cuda"},
                                            {"SOURCE_DATE_EPOCH", "0"},
                                            {"MAX_JOBS", "4"}};
  rec.inputs["environment"] = env;
  auto back = parse("r.json", render(rec));
  ASSERT_TRUE(back) << back.error().render();
  EXPECT_EQ(back->environment, env);
}

TEST(RecordVariables, OthersAreRefusedByName) {
  Record rec;
  rec.inputs["environment"] = {{"LD_PRELOAD", "/tmp/x.so"}};
  auto back = parse("r.json", render(rec));
  ASSERT_FALSE(back);
  EXPECT_EQ(back.error().message,
            "r.json: field 'inputs.environment.LD_PRELOAD' is not a variable opforge records (DS_*, "
            "TORCH_CUDA_ARCH_LIST, CUDA_HOME, CUDA_PATH, SOURCE_DATE_EPOCH, MAX_JOBS, CFLAGS, CXXFLAGS, LDFLAGS, "
            "NVCC_APPEND_FLAGS, NVCC_PREPEND_FLAGS, CMAKE_ARGS, SKBUILD_*)");
}

}  // namespace
}  // namespace opforge::record
