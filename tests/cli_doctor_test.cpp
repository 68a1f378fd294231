#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "probe/machine.h"

namespace opforge {
namespace {

TEST(CliDoctor, JsonReportsTheRealMachine) {
  auto m = probe::real_machine();
  auto r = m.proc.run(probe::Command{.argv = {OPFORGE_BINARY, "doctor", "--json", "--python", "/usr/bin/python3"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->exit_code, 0) << r->err;
  auto j = nlohmann::json::parse(r->out);
  for (auto key : {"torch", "toolkits", "compilers", "gpus", "libaio", "ninja", "ccache", "ops", "warnings"})
    EXPECT_TRUE(j.contains(key)) << key;
  if (m.fs.is_executable("/usr/local/cuda-13.0/bin/nvcc")) {
    bool found = false;
    for (auto& t : j["toolkits"]) {
      EXPECT_NE(t["path"], "/usr/local");
      if (t["path"] == "/usr/local/cuda-13.0") {
        found = true;
        EXPECT_EQ(t["version"], "13.0");
        EXPECT_EQ(t["max_gcc"], 15);
      }
    }
    EXPECT_TRUE(found);
  }
  if (m.fs.type_of("/usr/bin/g++-11") != probe::FileType::none) {
    bool g11 = false;
    for (auto& c : j["compilers"]) g11 = g11 || c["cxx"] == "/usr/bin/g++-11";
    EXPECT_TRUE(g11);
  }
  // No GPU on CI: the report says how it looked.
  EXPECT_TRUE(j["gpus"]["reader"].is_string());
}

TEST(CliDoctor, TextMentionsEverySection) {
  auto r = probe::real_machine().proc.run(
      probe::Command{.argv = {OPFORGE_BINARY, "doctor", "--python", "/usr/bin/python3"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->exit_code, 0) << r->err;
  for (auto s : {"CUDA toolkits:", "Host compilers:", "GPUs (", "libaio:", "ninja:", "ccache:", "Ops:"})
    EXPECT_NE(r->out.find(s), std::string::npos) << s;
}

// `location` is the folder Python imports torch from (found without importing it), which need not
// be under a site-packages folder: here a torch on PYTHONPATH.
TEST(CliDoctor, TorchLocationIsWherePythonImportsItFrom) {
  namespace fs = std::filesystem;
  const fs::path top = fs::temp_directory_path() / ("opforge-doctor-loc-" + std::to_string(::getpid()));
  fs::remove_all(top);
  fs::create_directories(top / "torch");
  std::ofstream(top / "torch" / "__init__.py") << "raise ImportError('doctor must not import torch')\n";
  std::ofstream(top / "torch" / "version.py") << "__version__ = '2.15.0+cu132'\ncuda = '13.2'\n";
  auto m = probe::real_machine();
  auto env = m.env.all();
  env["PYTHONPATH"] = top.string();
  auto r = m.proc.run(
      probe::Command{.argv = {OPFORGE_BINARY, "doctor", "--json", "--python", "/usr/bin/python3"}, .env = env});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->exit_code, 0) << r->err;
  auto t = nlohmann::json::parse(r->out)["torch"];
  EXPECT_EQ(t["location"], (top / "torch").string());
  EXPECT_EQ(t["version"], "2.15.0+cu132");
  EXPECT_EQ(t["cuda"], "13.2");
  fs::remove_all(top);
}

}  // namespace
}  // namespace opforge
