#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "wheel/wheel.h"
#include "wheel_test_util.h"

namespace opforge::wheel {
namespace {

std::string run(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *rc = pclose(p);
  return out;
}

}  // namespace

// Real nvcc library in a wheel, then the real opforge binary.
TEST(WheelInspect, CliReportsArchitecturesAndGlibcVersions) {
  const std::string nvcc = "/usr/local/cuda-13.0/bin/nvcc";
  if (!std::filesystem::exists(nvcc)) GTEST_SKIP() << "nvcc is not available at " << nvcc;
  auto dir = testing::temp_dir("inspect");
  ASSERT_TRUE(testing::build_nvcc_library(nvcc, dir));
  Spec s;
  s.name = "opforge-ops";
  s.version = "0.1.0+cu13";
  s.files = {{"opforge_ops/_lib/libopforge_k.so", testing::slurp(dir / "k.so"), 0755}};
  auto m = probe::real_machine();
  auto w = write(m.fs, s, dir);
  ASSERT_TRUE(w) << w.error().message;

  int rc = 0;
  auto out = run(std::string(OPFORGE_BINARY) + " inspect --json " + w->path.string(), &rc);
  ASSERT_EQ(rc, 0) << out;
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["version"], "0.1.0+cu13");
  EXPECT_TRUE(j["valid"].get<bool>());
  EXPECT_EQ(j["tags"][0], "py3-none-" + j["computed_platform"].get<std::string>());
  const auto& elf = j["files"][0]["elf"];
  std::set<std::string> names;
  for (const auto& img : elf["fatbin"]) names.insert(img["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"sm_80", "sm_90", "compute_90"}));
  EXPECT_TRUE(elf["version_needs"].contains("libc.so.6"));

  auto textual = run(std::string(OPFORGE_BINARY) + " inspect " + w->path.string(), &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_NE(textual.find("gpu code: sm_80 sm_90  ptx: compute_90"), std::string::npos) << textual;
  EXPECT_NE(textual.find("libc.so.6: GLIBC_"), std::string::npos) << textual;

  // A missing wheel is bad input (exit 2), named, with a hint; not a crash.
  const std::string nope = (dir / "nope.whl").string();
  auto missing = run(std::string(OPFORGE_BINARY) + " inspect " + nope + " 2>&1", &rc);
  ASSERT_TRUE(WIFEXITED(rc)) << "status " << rc << ": " << missing;
  EXPECT_EQ(WEXITSTATUS(rc), 2) << missing;
  EXPECT_EQ(missing, "opforge: error: " + nope + ": no such file\n  hint: pass a .whl file\n");

  // auditwheel agrees with the tag opforge chose for a real CUDA library (static cudart).
  const std::filesystem::path auditwheel = std::filesystem::path(OPFORGE_SOURCE_DIR) / ".venv-tools/bin/auditwheel";
  if (!std::filesystem::exists(auditwheel)) {
    std::filesystem::remove_all(dir);
    GTEST_SKIP() << "the auditwheel comparison needs " << auditwheel << " (./scripts/deps installs it)";
  }
  auto aw = run(auditwheel.string() + " show --json " + w->path.string(), &rc);
  ASSERT_EQ(rc, 0) << aw;
  EXPECT_EQ(nlohmann::json::parse(aw)["overall_tag"], j["computed_platform"]) << aw;
  std::filesystem::remove_all(dir);
}

}  // namespace opforge::wheel
