#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "plan/matrix.h"
#include "probe/fake_machine.h"
#include "recipe/recipe.h"

namespace opforge::plan {
namespace {

const char* kMatrix = R"([package]
name = "tinyscale"
local_version = "cu{cuda_major}{cuda_minor}torch{torch_major}{torch_minor}"

[matrix]
torch = ["2.14.0", "2.15"]
python = ["python3.11", "/opt/py312/bin/python3"]
requirements = ["numpy", "ninja"]
)";

struct MatrixWorld {
  probe::FakeMachine w;
  MatrixWorld(const std::string& recipe) {
    w.fs.add_file("/p/opforge.toml", recipe);
    probe::ProcessResult py311{0, 0, false, "/usr/bin/python3.11\n3.11\n", ""};
    probe::ProcessResult py312{0, 0, false, "/opt/py312/bin/python3.12\n3.12\n", ""};
    w.proc.on({"python3.11", "-c"}, py311);
    w.proc.on({"/opt/py312/bin/python3", "-c"}, py312);
    w.proc.on({"python3.11", "-m", "venv"}, probe::ProcessResult{0, 0, false, "", ""});
    w.proc.on({"/opt/py312/bin/python3", "-m", "venv"}, probe::ProcessResult{0, 0, false, "", ""});
  }
  Result<recipe::Recipe> recipe() { return recipe::load(w.machine(), "/p/opforge.toml"); }
};

TEST(PlanMatrix, CellIdsAndOrder) {
  MatrixWorld world(kMatrix);
  auto r = world.recipe();
  ASSERT_TRUE(r) << r.error().render();
  auto cs = cells(world.w.machine(), *r, "/cache");
  ASSERT_TRUE(cs) << cs.error().render();
  ASSERT_EQ(cs->size(), 4u);
  EXPECT_EQ((*cs)[0].id, "torch2.14.0-py3.11");
  EXPECT_EQ((*cs)[1].id, "torch2.14.0-py3.12");
  EXPECT_EQ((*cs)[2].id, "torch2.15-py3.11");
  EXPECT_EQ((*cs)[3].index, 3u);
  EXPECT_EQ((*cs)[0].torch_requirement, "torch==2.14.0");
  EXPECT_EQ((*cs)[2].torch_requirement, "torch==2.15.*");
  // The environment's folder is decided by what goes into it.
  EXPECT_EQ((*cs)[0].env,
            fs::path("/cache/envs") / env_hash("/usr/bin/python3.11", "3.11", "torch==2.14.0", {"ninja", "numpy"}));
  EXPECT_NE((*cs)[0].env, (*cs)[2].env);
  EXPECT_FALSE((*cs)[0].ready);
  EXPECT_EQ(env_hash("/p", "3.11", "torch==2.14.0", {"b", "a"}), env_hash("/p", "3.11", "torch==2.14.0", {"a", "b"}));
}

TEST(PlanMatrix, JsonIsAGithubActionsIncludeList) {
  MatrixWorld world(kMatrix);
  auto r = world.recipe();
  auto cs = cells(world.w.machine(), *r, "/cache");
  ASSERT_TRUE(cs);
  std::vector<CellView> views;
  for (auto& c : *cs) views.push_back({c, c.index == 0 ? "13.0" : "", "", c.index == 0 ? "installed" : "unknown"});
  auto j = nlohmann::json::parse(matrix_json(views));
  ASSERT_TRUE(j["include"].is_array());
  ASSERT_EQ(j["include"].size(), 4u);
  EXPECT_EQ(j["include"][0],
            nlohmann::json::parse(R"({"cell": "torch2.14.0-py3.11", "index": 0, "torch": "2.14.0", "python": "3.11",
                                      "platform": "x86_64", "cuda": "13.0", "toolkit_from": "installed"})"));
  EXPECT_EQ(j["include"][3]["cell"], "torch2.15-py3.12");
}

TEST(PlanMatrix, SelectByIdAndIndex) {
  MatrixWorld world(kMatrix);
  auto r = world.recipe();
  auto cs = *cells(world.w.machine(), *r, "/cache");
  EXPECT_EQ(select(*r, cs, "torch2.15-py3.11", std::nullopt)->front().index, 2u);
  EXPECT_EQ(select(*r, cs, "", 1)->front().id, "torch2.14.0-py3.12");
  EXPECT_EQ(select(*r, cs, "", std::nullopt)->size(), 4u);
  auto unknown = select(*r, cs, "torch2.16.0-py3.11", std::nullopt);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(unknown.error().where.line, 5) << unknown.error().render();
  EXPECT_NE(unknown.error().hint.find("torch2.14.0-py3.11"), std::string::npos);
  auto past = select(*r, cs, "", 4);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error().kind, ErrorKind::bad_input);
  EXPECT_NE(past.error().hint.find("--array=0-3"), std::string::npos);
}

TEST(PlanMatrix, MissingPythonIsBadInputAtItsLine) {
  MatrixWorld world(kMatrix);
  world.w.proc.on({"/opt/py312/bin/python3", "-c"}, probe::ProcessResult{127, 0, false, "", "not found"});
  auto r = world.recipe();
  auto cs = cells(world.w.machine(), *r, "/cache");
  ASSERT_FALSE(cs);
  EXPECT_EQ(cs.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(cs.error().where.line, 7);
  EXPECT_NE(cs.error().message.find("/opt/py312/bin/python3"), std::string::npos);
}

TEST(PlanMatrix, NamedEnvironmentReplacesTheMadeOne) {
  MatrixWorld world(std::string(kMatrix) + "environments = { \"torch2.14.0-py3.11\" = \"/venvs/t214/bin/python\" }\n");
  world.w.fs.add_file("/venvs/t214/bin/python", "", 0755);
  auto r = world.recipe();
  ASSERT_TRUE(r) << r.error().render();
  auto cs = cells(world.w.machine(), *r, "/cache");
  ASSERT_TRUE(cs) << cs.error().render();
  EXPECT_EQ((*cs)[0].env, "/venvs/t214");
  EXPECT_TRUE((*cs)[0].user_env);
  EXPECT_TRUE((*cs)[0].ready);
  MatrixWorld bad(std::string(kMatrix) + "environments = { \"torch9.9.9-py3.11\" = \"/venvs/t214/bin/python\" }\n");
  auto rb = bad.recipe();
  ASSERT_TRUE(rb);
  auto cb = cells(bad.w.machine(), *rb, "/cache");
  ASSERT_FALSE(cb);
  EXPECT_EQ(cb.error().where.line, 9);
}

TEST(PlanMatrix, EnvironmentIsMadeOnceThenReused) {
  MatrixWorld world(kMatrix);
  auto r = world.recipe();
  auto cs = *cells(world.w.machine(), *r, "/cache");
  Cell c = cs[0];
  world.w.proc.on({c.env_python.string()}, probe::ProcessResult{0, 0, false, "Successfully installed torch", ""});
  ASSERT_TRUE(ensure_env(world.w.machine(), *r, c, {}));
  EXPECT_TRUE(c.ready);
  const auto& calls = world.w.proc.calls();
  ASSERT_GE(calls.size(), 2u);
  EXPECT_EQ(calls[calls.size() - 2].argv, (std::vector<std::string>{"python3.11", "-m", "venv", c.env.string()}));
  EXPECT_EQ(calls.back().argv,
            (std::vector<std::string>{c.env_python.string(), "-m", "pip", "install", "--disable-pip-version-check",
                                      "--no-input", "torch==2.14.0", "numpy", "ninja"}));
  const auto n = calls.size();
  Cell again = cs[0];
  ASSERT_TRUE(ensure_env(world.w.machine(), *r, again, {}));
  EXPECT_EQ(world.w.proc.calls().size(), n);
}

TEST(PlanMatrix, FailedPipLeavesNoEnvironment) {
  MatrixWorld world(kMatrix);
  auto r = world.recipe();
  auto cs = *cells(world.w.machine(), *r, "/cache");
  Cell c = cs[0];
  world.w.fs.add_file(c.env_python, "", 0755);
  world.w.proc.on({c.env_python.string()}, probe::ProcessResult{1, 0, false, "", "ERROR: No matching distribution"});
  auto made = ensure_env(world.w.machine(), *r, c, {});
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().kind, ErrorKind::unsatisfied);
  EXPECT_EQ(world.w.fs.type_of(c.env), probe::FileType::none);
}

// [matrix] platform: each torch × Python cell also for each machine, innermost; a cell for another
// machine than this one says so in its id and shares its torch and Python's environment.
TEST(PlanMatrix, PlatformAxisCellsShareTheirEnvironment) {
  MatrixWorld world(std::string(kMatrix) + "platform = [\"x86_64\", \"arm64\"]\n");
  auto r = world.recipe();
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->matrix.platform, (std::vector<std::string>{"x86_64", "aarch64"}));
  auto cs = cells(world.w.machine(), *r, "/cache");
  ASSERT_TRUE(cs) << cs.error().render();
  ASSERT_EQ(cs->size(), 8u);
  EXPECT_EQ((*cs)[0].id, "torch2.14.0-py3.11");
  EXPECT_EQ((*cs)[0].platform, "x86_64");
  EXPECT_EQ((*cs)[1].id, "torch2.14.0-py3.11-aarch64");
  EXPECT_EQ((*cs)[1].platform, "aarch64");
  EXPECT_EQ((*cs)[1].env, (*cs)[0].env);
  EXPECT_EQ((*cs)[2].id, "torch2.14.0-py3.12");
  EXPECT_EQ((*cs)[7].id, "torch2.15-py3.12-aarch64");
  auto one = select(*r, *cs, "torch2.15-py3.11-aarch64", std::nullopt);
  ASSERT_TRUE(one);
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].index, 5u);
}

// [matrix] arch: each torch × Python (× platform) cell once per arch list, then its fallback, the
// plain wheel for their union; one environment for them all.
TEST(PlanMatrix, ArchAxisCellsThenTheirFallback) {
  MatrixWorld world(std::string(kMatrix) +
                    "arch = [\"8.0\", \"9.0\"]\nenvironments = { \"torch2.15-py3.12\" = "
                    "\"/venv/bin/python\" }\n\n[wheel]\nvariants = true\n");
  world.w.fs.add_file("/venv/bin/python", "", 0755);
  auto r = world.recipe();
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->matrix.arch, (std::vector<std::string>{"8.0", "9.0"}));
  auto cs = cells(world.w.machine(), *r, "/cache");
  ASSERT_TRUE(cs) << cs.error().render();
  ASSERT_EQ(cs->size(), 12u);
  std::vector<std::string> ids, arches;
  for (auto& c : std::vector<Cell>(cs->begin(), cs->begin() + 3)) ids.push_back(c.id), arches.push_back(c.arch);
  EXPECT_EQ(ids, (std::vector<std::string>{"torch2.14.0-py3.11-sm80", "torch2.14.0-py3.11-sm90",
                                           "torch2.14.0-py3.11-fallback"}));
  EXPECT_EQ(arches, (std::vector<std::string>{"8.0", "9.0", "8.0;9.0+PTX"}));
  EXPECT_FALSE((*cs)[1].fallback);
  EXPECT_TRUE((*cs)[2].fallback);
  EXPECT_EQ((*cs)[2].base_id, "torch2.14.0-py3.11");
  EXPECT_EQ((*cs)[0].env, (*cs)[2].env);
  EXPECT_EQ((*cs)[11].id, "torch2.15-py3.12-fallback");
  // [matrix] environments names the cell without its arch part: all three of its cells use it.
  for (std::size_t i = 9; i < 12; ++i) EXPECT_EQ((*cs)[i].env_python, fs::path("/venv/bin/python")) << i;
  EXPECT_FALSE((*cs)[8].user_env);
  // A CI job per cell: --cell selects one arch list's, or the fallback.
  EXPECT_EQ(select(*r, *cs, "torch2.15-py3.11-sm90", std::nullopt)->front().index, 7u);
  std::vector<CellView> views;
  for (auto& c : *cs) views.push_back({c, "", "", "unknown"});
  auto j = nlohmann::json::parse(matrix_json(views));
  EXPECT_EQ(j["include"][2], nlohmann::json::parse(R"({"cell": "torch2.14.0-py3.11-fallback", "index": 2,
      "torch": "2.14.0", "python": "3.11", "platform": "x86_64", "cuda": "", "toolkit_from": "unknown",
      "arch": "8.0;9.0+PTX", "fallback": true})"));
  EXPECT_EQ(j["include"][0]["arch"], "8.0");
  EXPECT_EQ(j["include"][0]["fallback"], false);
}

// The fallback runs wherever a variant runs: every SASS, every PTX a variant holds, and PTX for the
// newest architecture without a suffix (the GPUs newer than every list JIT it).
TEST(PlanMatrix, FallbackIsTheUnionAndTheNewestPtx) {
  auto f = [](std::vector<std::string> lists) {
    auto got = fallback_arch_list(lists);
    EXPECT_TRUE(got) << got.error().render();
    return got ? *got : std::string();
  };
  EXPECT_EQ(f({"8.0", "9.0"}), "8.0;9.0+PTX");
  EXPECT_EQ(f({"8.0", "9.0", "10.0+PTX"}), "8.0;9.0;10.0+PTX");
  EXPECT_EQ(f({"9.0", "8.0;8.6"}), "8.0;8.6;9.0+PTX");
  EXPECT_EQ(f({"8.0"}), "8.0+PTX");
  // An older list's PTX stays: on an 8.0 GPU it is the only code that runs of 7.5+PTX and 9.0.
  EXPECT_EQ(f({"7.5+PTX", "9.0"}), "7.5+PTX;9.0+PTX");
  // Arch-specific PTX runs on its own GPU only: the newest plain architecture gets the PTX.
  EXPECT_EQ(f({"8.0", "9.0a"}), "8.0+PTX;9.0a");
  EXPECT_EQ(f({"9.0a", "9.0"}), "9.0+PTX;9.0a");
  EXPECT_EQ(arch_tag("8.0"), "sm80");
  EXPECT_EQ(arch_tag("9.0;10.0+PTX"), "sm90_100ptx");
  EXPECT_EQ(arch_tag("9.0a"), "sm90a");
}

TEST(RecipeMatrix, BadInputPointsAtTheLine) {
  struct Case {
    std::string text;
    int line;
    std::string says;
  };
  std::vector<Case> cases = {
      {"[matrix]\ntorch = []\n", 2, "matrix has no cell"},
      {"[matrix]\ntorch = [\"2.15.0\", \"latest\"]\n", 2, "'latest' is not a torch version"},
      {"[matrix]\ntorch = [\"2.15.0+cu132\"]\n", 2, "not a torch version"},
      {"[matrix]\npython = [\"python3\"]\n", 1, "needs torch"},
      {"[matrix]\ntorch = [\"2.15\", \"2.15\"]\n", 2, "twice"},
      {"[matrix]\ntorch = [\"2.15\"]\ncuda = \"13.2\"\n", 3, "cuda"},
      {"[matrix]\ntorch = [\"2.15\"]\nplatform = [\"x86_64\", \"sparc\"]\n", 3,
       "matrix.platform: unknown platform \"sparc\""},
      {"[matrix]\ntorch = [\"2.15\"]\nplatform = [\"arm64\", \"aarch64\"]\n", 3, "lists aarch64 twice"},
      {"[matrix]\ntorch = [\"2.15\"]\nplatform = []\n", 3, "non-empty array"},
      {"[package]\nlocal_version = \"torch{torch_maj}\"\n", 2, "unknown placeholder"},
      {"[matrix]\ntorch = [\"2.15\"]\narch = [\"8.0\"]\n", 3, "[wheel] variants is not on"},
      {"[matrix]\ntorch = [\"2.15\"]\narch = [\"auto\"]\n", 3, "\"auto\" is not an arch list"},
      {"[matrix]\ntorch = [\"2.15\"]\narch = [\"8.0\", \"9.1x\"]\n", 3, "matrix.arch:"},
      {"[matrix]\ntorch = [\"2.15\"]\narch = [\"8.0\", \"8.0\"]\n", 3, "twice"},
      {"[matrix]\ntorch = [\"2.15\"]\narch = []\n", 3, "non-empty array"},
      {"[cuda]\nversion = \"auto\"\nprovision = \"pypi\"\n", 3, "needs version = \"torch\""},
      {"[cuda]\nversion = \"torch\"\nprovision = \"conda\"\n", 3, "is not \"none\" or \"pypi\""},
  };
  for (auto& c : cases) {
    auto r = recipe::parse_file("/p/r.toml", c.text);
    ASSERT_FALSE(r) << c.text;
    EXPECT_EQ(r.error().kind, ErrorKind::bad_input) << c.text;
    EXPECT_EQ(r.error().where.line, c.line) << c.text << r.error().render();
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().message;
  }
  auto ok = recipe::parse_file("/p/r.toml", "[cuda]\nversion = \"torch\"\nprovision = \"pypi\"\n");
  ASSERT_TRUE(ok) << ok.error().render();
  EXPECT_EQ(ok->cuda.provision, "pypi");
}

}  // namespace
}  // namespace opforge::plan
