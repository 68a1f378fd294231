// `opforge plan`/`build` on a DeepSpeed-style tree (tests/fixtures/fake_deepspeed) with Debian's
// python3: the op table, the command and its environment, and the bad inputs (a misspelt op, a
// requested op DeepSpeed calls incompatible, an op_builder/ that cannot be read).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

struct Run {
  int code = -1;
  std::string out;  ///< stdout and stderr
};

Run run(const std::string& cmd) {
  Run r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

const fs::path kDir = fs::path(OPFORGE_BUILD_DIR) / "cli_deepspeed";

std::string recipe(const std::string& name, const std::string& ops, const std::string& tree = "",
                   const std::string& command = "[\"/bin/sh\", \"-c\", \"touch ran; exit 1\"]") {
  fs::create_directories(kDir);
  std::ofstream(kDir / name) << "[package]\nname = \"deepspeed\"\nversion = \"0.3.0\"\nlocal_version = \"none\"\n"
                             << "[source]\npath = \""
                             << (tree.empty() ? std::string(OPFORGE_TEST_FIXTURES) + "/fake_deepspeed" : tree)
                             << "\"\n[cuda]\npython = \"/usr/bin/python3\"\n[arch]\nlist = \"8.0\"\n"
                             << "[ops]\n"
                             << ops << "[build]\nbackend = \"command\"\ncommand = " << command << "\n";
  return (kDir / name).string();
}

std::string opforge_cmd(const std::string& env = "") {
  return "cd '" + kDir.string() + "' && env -i PATH=/usr/bin:/bin HOME=/nonexistent OPFORGE_CACHE_DIR='" +
         (kDir / "cache").string() + "' " + env + " '" + OPFORGE_BINARY + "' ";
}

}  // namespace

TEST(CliDeepspeed, PlanShowsTheOpTableTheCommandAndItsEnvironment) {
  auto r = run(opforge_cmd() + "plan " + recipe("ok.toml", "cpu_adam = true\nnever = \"auto\"\n"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("build   cpu_adam (cpu, recipe: true): compatible (is_compatible())"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("skipped never (cpu, recipe: \"auto\"): NeverBuilder.is_compatible() says no: "
                       "never requires libnever-dev, which was not found"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("DS_ENABLE_NINJA=1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("DS_BUILD_CPU_ADAM=1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("TORCH_NO_COMPILER_WRAPPER=1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("command       (run in a fresh copy"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("run by ninja"), std::string::npos) << r.out;
}

TEST(CliDeepspeed, MisspeltOpIsExit2WithASuggestion) {
  auto r = run(opforge_cmd() + "plan " + recipe("typo.toml", "fused_thin = true\n"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("[ops] names 'fused_thin', which is not an op; did you mean 'fused_thing'?"), std::string::npos)
      << r.out;
  auto e = run(opforge_cmd("DS_BUILD_FUSED_THNG=1") + "plan " + recipe("typo_env.toml", ""));
  EXPECT_EQ(e.code, 2) << e.out;
  EXPECT_NE(e.out.find("DS_BUILD_FUSED_THNG names no op; did you mean DS_BUILD_FUSED_THING?"), std::string::npos)
      << e.out;
}

TEST(CliDeepspeed, RequestedIncompatibleOpIsExit3BeforeAnythingRuns) {
  fs::remove(kDir / "ran");
  auto r = run(opforge_cmd() + "build " + recipe("never.toml", "never = true\n"));
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("op 'never' was requested (recipe: true) but cannot be built: NeverBuilder.is_compatible() "
                       "says no: never requires libnever-dev, which was not found"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(kDir / "ran"));
  fs::remove_all(fs::path(OPFORGE_BUILD_DIR) / "cli_deepspeed" / "cache" / "trees");
}

TEST(CliDeepspeed, UnreadableOpBuilderIsExit2) {
  fs::path tree = kDir / "broken_tree";
  fs::remove_all(tree);
  fs::create_directories(tree);
  fs::copy(fs::path(OPFORGE_TEST_FIXTURES) / "fake_deepspeed", tree, fs::copy_options::recursive);
  std::ofstream(tree / "op_builder" / "bad.py") << "class BadBuilder(OpBuilder:\n";
  auto r = run(opforge_cmd() + "plan " + recipe("broken.toml", "cpu_adam = true\n", tree.string()));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("cannot read DeepSpeed's op builders in '" + (tree / "op_builder").string() + "'"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("bad.py"), std::string::npos) << r.out;
}

TEST(CliDeepspeed, TheGuidesVariablesSelectExactlyTheirOps) {
  auto r = run(opforge_cmd("TORCH_CUDA_ARCH_LIST=8.6 DS_BUILD_CPU_ADAM=1 DS_BUILD_HIO=1") + "plan --json " +
               recipe("guide.toml", "fused_thing = true\n"));
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  std::vector<std::string> built;
  for (auto& op : j["ops"])
    if (op["build"] == true) built.push_back(op["name"]);
  EXPECT_EQ(built, (std::vector<std::string>{"cpu_adam", "host_io"}));  // the variables beat [ops]
  EXPECT_EQ(j["command"]["environment"]["TORCH_CUDA_ARCH_LIST"], "8.6");
  EXPECT_EQ(j["command"]["environment"]["DS_BUILD_FUSED_THING"], "0");
  EXPECT_EQ(j["command"]["environment"]["DS_ACCELERATOR"], "cuda");
  EXPECT_EQ(j["source"]["catalogue"], "op_builder");
}
