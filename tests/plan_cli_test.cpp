// `opforge env` output evaluates cleanly in a shell; `opforge plan --json` is valid JSON.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
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

/// A recipe of the fixture ops, one file per test: ctest runs the tests of this file at once,
/// and a file rewritten by one while another reads it would be read empty.
std::string fixture_recipe(const std::string& name) {
  fs::path dir = fs::path(OPFORGE_BUILD_DIR) / "plan_cli";
  fs::create_directories(dir);
  std::ofstream(dir / (name + ".toml")) << "[source]\npath = \"" << OPFORGE_TEST_FIXTURES
                                        << "\"\nops_dir = \"ops\"\n[package]\nlocal_version = \"none\"\n";
  return (dir / (name + ".toml")).string();
}

std::string env_prefix() {
  return "env -i PATH=/usr/bin:/bin HOME=/nonexistent OPFORGE_CACHE_DIR='" +
         (fs::path(OPFORGE_BUILD_DIR) / "plan_cli" / "cache").string() + "' ";
}

TEST(PlanCli, EnvLinesEvalInAShell) {
  std::string recipe = fixture_recipe("env");
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
      capture(env_prefix() + "DS_BUILD_OPS=1 '" + OPFORGE_BINARY + "' plan --json '" + fixture_recipe("json") + "'");
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

/// Runs `cmd`; {exit code, stdout}.
std::pair<int, std::string> run_status(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

/// Every leaf of `j` of another type: a string becomes a number, a number a string, a boolean a
/// string, null an array; objects and arrays keep their shape with damaged members.
nlohmann::json confuse(const nlohmann::json& j) {
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (auto& [k, v] : j.items()) out[k] = confuse(v);
    return out;
  }
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (auto& v : j) out.push_back(confuse(v));
    return out;
  }
  if (j.is_string()) return -7;
  if (j.is_number()) return "x";
  if (j.is_boolean()) return "yes";
  return nlohmann::json::array();
}

TEST(PlanCli, DamagedCachesAreMisses) {
  // Every JSON file of the cache, damaged two ways (each value of another type; cut short), is
  // a miss: plan says what it said with a sound cache, doctor and cache still answer.
  const fs::path cache = fs::path(OPFORGE_BUILD_DIR) / "plan_cli" / "damaged-cache";
  fs::remove_all(cache);
  // MAX_JOBS fixed: else the plan's jobs and their reason follow the memory free at that moment,
  // which other tests running beside this one change between two plans.
  const std::string prefix = "env -i PATH=/usr/bin:/bin HOME=/nonexistent MAX_JOBS=2 OPFORGE_CACHE_DIR='" +
                             cache.string() + "' '" + OPFORGE_BINARY + "' ";
  const auto plan = prefix + "plan --json '" + fixture_recipe("damaged") + "' 2>/dev/null";
  auto [code, sound] = run_status(plan);
  ASSERT_EQ(code, 0) << sound;
  std::vector<fs::path> files;
  for (auto& e : fs::recursive_directory_iterator(cache))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  ASSERT_GE(files.size(), 2u);  // at least the probes' and the versions' caches
  for (const bool cut : {false, true}) {
    for (auto& f : files) {
      std::ifstream in(f);
      std::stringstream text;
      text << in.rdbuf();
      auto j = nlohmann::json::parse(text.str(), nullptr, false);
      std::ofstream(f, std::ios::trunc) << (cut ? text.str().substr(0, text.str().size() / 2) : confuse(j).dump());
    }
    auto [again, out] = run_status(plan);
    EXPECT_EQ(again, 0) << (cut ? "cut short: " : "wrong types: ") << out;
    EXPECT_EQ(nlohmann::json::parse(out, nullptr, false), nlohmann::json::parse(sound, nullptr, false))
        << (cut ? "cut short" : "wrong types");
    EXPECT_EQ(run_status(prefix + "doctor --json >/dev/null 2>&1").first, 0);
    EXPECT_EQ(run_status(prefix + "cache >/dev/null 2>&1").first, 0);
  }
}

}  // namespace
