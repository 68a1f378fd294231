#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probe/machine.h"

namespace opforge {
namespace {

/// What `sh -c SCRIPT` prints, without its last newline.
std::string shell(const std::string& script) {
  auto r = probe::real_machine().proc.run(probe::Command{.argv = {"sh", "-c", script}});
  if (!r || r->exit_code != 0) return "";
  std::string out = r->out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Every value is checked against what the machine itself says (PATH, the tools' own --version).
TEST(CliDoctor, JsonReportsTheRealMachine) {
  auto m = probe::real_machine();
  auto r = m.proc.run(probe::Command{.argv = {OPFORGE_BINARY, "doctor", "--json", "--python", "/usr/bin/python3"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->exit_code, 0) << r->err;
  auto j = nlohmann::json::parse(r->out);
  EXPECT_EQ(j["torch"]["python"], "/usr/bin/python3");
  EXPECT_TRUE(j["warnings"].is_array());

  // The bundled ops, by name, each with a verdict.
  std::vector<std::string> ops;
  for (auto& op : j["ops"]) {
    ops.push_back(op["name"]);
    EXPECT_TRUE(op["build"].is_boolean());
    EXPECT_FALSE(op["reason"].get<std::string>().empty()) << op.dump();
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"aio", "cpu_adam", "overflow", "utils"}));

  // ninja (a dependency): the one on PATH, with its own version line.
  const std::string ninja = shell("command -v ninja");
  ASSERT_FALSE(ninja.empty()) << "ninja is a dependency (./scripts/deps)";
  EXPECT_EQ(j["ninja"]["path"], ninja);
  EXPECT_EQ(j["ninja"]["version"], shell("ninja --version | head -n 1"));
  const std::string ccache = shell("command -v ccache");
  if (ccache.empty()) EXPECT_TRUE(j["ccache"]["path"].is_null()) << j["ccache"].dump();
  else EXPECT_EQ(j["ccache"]["path"], ccache);

  // Compilers: the default one first is the g++ on PATH, with the version gcc itself reports.
  ASSERT_FALSE(j["compilers"].empty());
  const auto& first = j["compilers"][0];
  EXPECT_EQ(first["default"], true);
  EXPECT_EQ(first["family"], "gcc");
  EXPECT_EQ(first["cxx"], shell("command -v g++"));
  EXPECT_EQ(first["version"], shell("g++ -dumpfullversion"));
  for (auto& c : j["compilers"]) {
    EXPECT_TRUE(c["family"] == "gcc" || c["family"] == "clang") << c.dump();
    EXPECT_TRUE(m.fs.is_executable(c["cxx"].get<std::string>())) << c.dump();
  }

  // The CUDA 13.0 toolkit is reported exactly when it is installed, with its header's limits.
  const bool has13 = m.fs.is_executable("/usr/local/cuda-13.0/bin/nvcc");
  const nlohmann::json* t13 = nullptr;
  for (auto& t : j["toolkits"]) {
    EXPECT_NE(t["path"], "/usr/local");
    if (t["path"] == "/usr/local/cuda-13.0") t13 = &t;
  }
  ASSERT_EQ(t13 != nullptr, has13) << j["toolkits"].dump();
  if (has13) {
    EXPECT_EQ((*t13)["version"], "13.0");
    EXPECT_EQ((*t13)["max_gcc"], 15);
    EXPECT_EQ((*t13)["limits_source"], "/usr/local/cuda-13.0/include/crt/host_config.h");
  }
  // No GPU on CI: the report says how it looked, and found none there.
  EXPECT_FALSE(j["gpus"]["reader"].get<std::string>().empty());
  EXPECT_TRUE(j["gpus"]["devices"].is_array());
}

TEST(CliDoctor, TextMentionsEverySection) {
  auto r = probe::real_machine().proc.run(
      probe::Command{.argv = {OPFORGE_BINARY, "doctor", "--python", "/usr/bin/python3"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->exit_code, 0) << r->err;
  for (auto s : {"CUDA toolkits:", "Host compilers:", "GPUs", "libaio:", "ninja:", "ccache:", "Ops:"})
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

// --variant-properties: the static providers of a variants.json, from the same report --json
// gives: torch's X, X.Y, X.Y.Z; nvidia's only where a driver answered.
TEST(CliDoctor, VariantPropertiesAreTheReportsFacts) {
  auto m = probe::real_machine();
  auto report =
      m.proc.run(probe::Command{.argv = {OPFORGE_BINARY, "doctor", "--json", "--python", "/usr/bin/python3"}});
  auto props = m.proc.run(
      probe::Command{.argv = {OPFORGE_BINARY, "doctor", "--variant-properties", "--python", "/usr/bin/python3"}});
  ASSERT_TRUE(report && props);
  ASSERT_EQ(props->exit_code, 0) << props->err;
  const auto j = nlohmann::json::parse(report->out), p = nlohmann::json::parse(props->out);
  ASSERT_TRUE(p["providers"].is_object()) << props->out;
  if (j["torch"].contains("version")) {
    const std::string v = j["torch"]["version"];
    const auto values = p["providers"]["abi_dependency"]["static-properties"]["torch"];
    ASSERT_EQ(values.size(), 3u) << props->out;
    EXPECT_TRUE(v.starts_with(values[2].get<std::string>())) << v;
    EXPECT_EQ(values[0], v.substr(0, v.find('.')));
  } else {
    EXPECT_FALSE(p["providers"].contains("abi_dependency"));
    EXPECT_NE(props->err.find("opforge: note: abi_dependency :: torch: "), std::string::npos) << props->err;
  }
  if (j["node"]["driver"].is_object() && j["node"]["driver"]["cuda"].is_string())
    EXPECT_EQ(p["providers"]["nvidia"]["static-properties"]["cuda_version_lower_bound"][0],
              j["node"]["driver"]["cuda"]);
  else EXPECT_FALSE(p["providers"].contains("nvidia")) << props->out;
}

}  // namespace
}  // namespace opforge
