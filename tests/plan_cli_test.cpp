// `opforge env` output evaluates cleanly in a shell; `opforge plan --json` is valid JSON.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

namespace fs = std::filesystem;

std::string capture(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  pclose(p);
  return out;
}

std::string fixture_recipe() {
  fs::path dir = fs::path(OPFORGE_BUILD_DIR) / "plan_cli";
  fs::create_directories(dir);
  std::ofstream(dir / "r.toml") << "[source]\npath = \"" << OPFORGE_TEST_FIXTURES
                                << "\"\nops_dir = \"ops\"\n[package]\nlocal_version = \"none\"\n";
  return (dir / "r.toml").string();
}

std::string env_prefix() {
  return "env -i PATH=/usr/bin:/bin HOME=/nonexistent OPFORGE_CACHE_DIR='" +
         (fs::path(OPFORGE_BUILD_DIR) / "plan_cli" / "cache").string() + "' ";
}

TEST(PlanCli, EnvLinesEvalInAShell) {
  std::string recipe = fixture_recipe();
  std::string script = "eval \"$('" + std::string(OPFORGE_BINARY) + "' env '" + recipe +
                       "')\" && echo \"$DS_BUILD_CPUOP $DS_BUILD_NOLIB $DS_BUILD_OPS $MAX_JOBS\"";
  std::string out = capture(env_prefix() + "DS_BUILD_CPUOP=1 MAX_JOBS=3 sh -c '" + [&] {
    std::string q;
    for (char c : script) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q;
  }() + "'");
  EXPECT_EQ(out, "1 0 0 3\n");
}

TEST(PlanCli, PlanJsonIsValidAndComplete) {
  std::string out =
      capture(env_prefix() + "DS_BUILD_OPS=1 '" + OPFORGE_BINARY + "' plan --json '" + fixture_recipe() + "'");
  auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["wheel_version"], "0.1.0");
  ASSERT_EQ(j["ops"].size(), 4u);
  EXPECT_EQ(j["ops"][1]["name"], "cpuop");
  EXPECT_EQ(j["ops"][1]["build"], true);
  EXPECT_EQ(j["ops"][1]["status"], "build");
  EXPECT_EQ(j["ops"][1]["reason"], "compatible");
  EXPECT_EQ(j["ops"][2]["name"], "nolib");
  EXPECT_EQ(j["ops"][2]["build"], false);
  EXPECT_EQ(j["ops"][2]["status"], "skipped");
  // The reason follows the status word, it does not repeat it.
  EXPECT_TRUE(
      j["ops"][2]["reason"].get<std::string>().starts_with("libopforge-missing not found (compiling and linking"))
      << j["ops"][2]["reason"];
  EXPECT_EQ(j["exports"]["DS_BUILD_CPUOP"], "1");
}

}  // namespace
