// plan::make on a fake machine: the resolution stages are replaced by resolvers describing a
// machine with CUDA 13.0 (or none), so the test covers what the plan itself decides.
#include <gtest/gtest.h>

#include <algorithm>

#include "plan/json.h"
#include "plan/plan.h"
#include "plan/provision_stage.h"
#include "plan/stages.h"
#include "probe/fake_machine.h"
#include "test_util.h"

namespace opforge::plan {
namespace {

using Names = std::vector<std::string>;

struct World {
  probe::FakeMachine fm;
  Options opts;
  bool has_cuda = true;
  std::optional<cuda::TorchInfo> torch;  ///< the project's Python's torch, as the resolver read it
  World(const std::string& recipe_body = "") {
    fm.fs.add_file("/r/recipes/default.toml",
                   "[package]\nversion = \"0.1.0\"\n[source]\npath = \"..\"\nops_dir = \"ops\"\n" + recipe_body);
    fm.fs.add_file("/r/ops/cpuop/op.toml", "name = \"cpuop\"\nkind = \"cpu\"\nsources = [\"a.cpp\"]\n");
    fm.fs.add_file("/r/ops/vecadd/op.toml", "name = \"vecadd\"\nkind = \"cuda\"\nsources = [\"a.cu\"]\n");
    fm.env.set("PATH", "/usr/bin");
    fm.env.set("OPFORGE_CACHE_DIR", "/cache");
    opts.resolvers.cuda = [this](probe::Machine, const std::string&, const std::string&) -> Result<cuda::Resolution> {
      if (!has_cuda) return unsatisfied("no CUDA toolkit found (looked in CUDA_HOME, PATH, /usr/local/cuda*)");
      cuda::Resolution r;
      cuda::Toolkit tk;
      tk.root = "/usr/local/cuda-13.0";
      tk.version = Version{13, 0, 0};
      r.chosen = tk;
      r.torch = torch;
      return r;
    };
    opts.resolvers.cuda_exports = [](const cuda::Toolkit& tk, const probe::Environment&) {
      return std::map<std::string, std::string>{{"CUDA_HOME", tk.root.string()},
                                                {"PATH", tk.root.string() + "/bin:/usr/bin"}};
    };
    opts.resolvers.host = [](probe::Machine, const cuda::Toolkit&, const std::string&, bool,
                             const fs::path& shim) -> Result<compiler::HostChoice> {
      compiler::HostChoice h;
      h.compiler.cc = "/usr/bin/gcc-12";
      h.compiler.cxx = "/usr/bin/g++-12";
      h.compiler.version = Version{12, 2, 0};
      h.shim_dir = shim;
      h.reason = "the default gcc 12 is accepted by nvcc 13.0 (max gcc 14)";
      return h;
    };
    opts.resolvers.arch = [](probe::Machine, const cuda::Toolkit&, const std::string& list,
                             const std::string& fallback) -> Result<devices::ArchDecision> {
      devices::ArchDecision d;
      d.source = list == "auto" ? "fallback" : "recipe [arch] list";
      d.arches = {target::Arch{8, 0, 0, false}, target::Arch{9, 0, 0, true}};
      (void)fallback;
      return d;
    };
  }
  Result<Plan> make(const fs::path& recipe = "/r/recipes/default.toml") {
    return plan::make(fm.machine(), recipe, opts);
  }
};

bool has(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

TEST(PlanMake, ResolvesEverythingAndExportsIt) {
  World w;
  auto p = w.make();
  ASSERT_TRUE(p) << p.error().render();
  EXPECT_EQ(p->source.root, "/r");
  EXPECT_EQ(p->source.ops_dir, "/r/ops");
  ASSERT_EQ(p->ops.size(), 2u);
  EXPECT_TRUE(p->ops[0].builds());
  EXPECT_TRUE(p->ops[1].builds());
  EXPECT_EQ(p->wheel_version, "0.1.0+cu13");
  EXPECT_EQ(p->build_dir, "/r/recipes/build/opforge");
  EXPECT_EQ(p->exports, (std::map<std::string, std::string>{
                            {"CC", "/r/recipes/build/opforge/shim/gcc"},
                            {"CUDA_HOME", "/usr/local/cuda-13.0"},
                            {"CXX", "/r/recipes/build/opforge/shim/g++"},
                            {"DS_BUILD_CPUOP", "1"},
                            {"DS_BUILD_OPS", "0"},
                            {"DS_BUILD_VECADD", "1"},
                            {"MAX_JOBS", "2"},
                            {"PATH", "/r/recipes/build/opforge/shim:/usr/local/cuda-13.0/bin:/usr/bin"},
                            {"SOURCE_DATE_EPOCH", "315532800"},
                            {"TORCH_CUDA_ARCH_LIST", "8.0;9.0+PTX"}}));
  EXPECT_TRUE(w.fm.proc.calls().empty()) << "no probe ran: no op has one";
  auto j = to_json(*p);
  EXPECT_EQ(j["wheel_version"], "0.1.0+cu13");
  EXPECT_EQ(j["ops"][1]["name"], "vecadd");
}

TEST(PlanMake, BuildDirOverrideMovesTheShim) {
  // --build-dir beats the recipe's build_dir, and what lives in the build folder follows it.
  World w;
  w.opts.build_dir = "/elsewhere/b";
  w.opts.dist_dir = "/elsewhere/d";
  auto p = w.make();
  ASSERT_TRUE(p) << p.error().render();
  EXPECT_EQ(p->build_dir, "/elsewhere/b");
  EXPECT_EQ(p->dist_dir, "/elsewhere/d");
  EXPECT_EQ(p->exports.at("CC"), "/elsewhere/b/shim/gcc");
  EXPECT_EQ(p->exports.at("PATH"), "/elsewhere/b/shim:/usr/local/cuda-13.0/bin:/usr/bin");
  ASSERT_TRUE(p->host && p->host->shim_dir);
  EXPECT_EQ(*p->host->shim_dir, "/elsewhere/b/shim");
}

TEST(PlanMake, ShimFolderWithAColonIsRefused) {
  // The shim's folder goes first on PATH, where ':' would cut it in two.
  World w("[build]\nbuild_dir = \"a:b\"\n");
  auto p = w.make();
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(p.error().message,
            "the compiler shim's folder '/r/recipes/a:b/shim' contains ':', which cannot stand in PATH (':' separates "
            "its folders)");
  EXPECT_EQ(p.error().hint, "set [build] build_dir to a folder without ':'");
}

TEST(PlanMake, WithoutToolkitCpuOpsStillBuild) {
  World w;
  w.has_cuda = false;
  auto p = w.make();
  ASSERT_TRUE(p) << p.error().render();
  EXPECT_TRUE(p->ops[0].builds());
  EXPECT_FALSE(p->ops[1].builds());
  EXPECT_EQ(p->ops[1].said(),
            "skipped: it needs CUDA: no CUDA toolkit found (looked in CUDA_HOME, PATH, "
            "/usr/local/cuda*); to build it, install a CUDA toolkit or set CUDA_HOME, or do not "
            "request vecadd");
  EXPECT_EQ(p->wheel_version, "0.1.0+cpu");
  EXPECT_EQ(p->exports.count("CUDA_HOME"), 0u);
  EXPECT_EQ(p->exports.at("DS_BUILD_VECADD"), "0");
}

TEST(PlanMake, PythonExtensionsGetTheProjectPythonsHeadersOrANote) {
  World w;
  w.fm.fs.add_file("/r/ops/cpuop/op.toml",
                   "name = \"cpuop\"\nkind = \"cpu\"\nsources = [\"a.cpp\"]\n"
                   "[python_extension]\nname = \"_cpuop_ext\"\nsources = [\"e.c\"]\nlimited_api = \"3.9\"\n");
  const std::vector<std::string> ask = {"python3", "-c"};
  // The answer of cuda::read_python's probe program (the one read_torch runs).
  auto answer = [](int minor) {
    const std::string v = std::to_string(minor);
    return probe::ProcessResult{.exit_code = 0,
                                .out = R"({"torch": null, "locations": [], "path": [], "cflags": "", "version": [3, )" +
                                       v + R"(], "include": "/usr/include/python3.)" + v + "\"}"};
  };
  auto note = [](const Plan& p) {
    for (auto& n : p.notes)
      if (n.starts_with("python headers: ")) return n;
    return std::string();
  };
  // no answer from the Python: left out, with the package to install
  auto none = w.make();
  ASSERT_TRUE(none) << none.error().render();
  EXPECT_TRUE(none->python_include.empty());
  EXPECT_EQ(note(*none),
            "python headers: not found for python3 (install python3-dev): the Python extensions of cpuop are left "
            "out, their Python code does the work");
  // a Python older than the floor
  // (each answer comes from another interpreter file: the remembered answer is keyed on its stamp)
  w.fm.fs.add_file("/usr/bin/python3", "python 3.8", 0755);
  w.fm.proc.on(ask, answer(8));
  w.fm.fs.add_file("/usr/include/python3.8/Python.h", "");
  auto old = w.make();
  ASSERT_TRUE(old);
  EXPECT_TRUE(old->python_include.empty());
  EXPECT_EQ(note(*old),
            "python headers: python3 is Python 3.8, older than the stable-ABI floor 3.9: the Python extensions of "
            "cpuop are left out, their Python code does the work");
  // 3.11 without Python.h, then with it
  w.fm.fs.add_file("/usr/bin/python3", "python 3.11", 0755);
  w.fm.proc.on(ask, answer(11));
  EXPECT_TRUE(w.make()->python_include.empty());
  w.fm.fs.add_file("/usr/include/python3.11/Python.h", "");
  auto p = w.make();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->python_include, "/usr/include/python3.11");
  EXPECT_EQ(note(*p), "python headers: /usr/include/python3.11 (the Python extensions of cpuop, stable ABI 3.9)");
  EXPECT_EQ(to_json(*p)["python_include"], "/usr/include/python3.11");
}

TEST(PlanMake, AnExplicitlyRequestedOpWithoutPythonHeadersIsUnsatisfied) {
  World w("[ops]\ncpuop = true\n");
  w.fm.fs.add_file("/r/ops/cpuop/op.toml",
                   "name = \"cpuop\"\nkind = \"cpu\"\nsources = [\"a.cpp\"]\n"
                   "[python_extension]\nname = \"_cpuop_ext\"\nsources = [\"e.c\"]\n");
  auto p = w.make();
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().kind, ErrorKind::unsatisfied);
  EXPECT_EQ(p.error().message,
            "python headers: not found for python3 (install python3-dev), and the Python extensions of cpuop cannot "
            "be built without them; cpuop (recipe: true) asked for the whole op");
  EXPECT_NE(p.error().hint.find("python3-dev (apt)"), std::string::npos) << p.error().hint;
}

TEST(PlanMake, WithoutToolkitARequestedCudaOpIsUnsatisfied) {
  World w("[ops]\nvecadd = true\n");
  w.has_cuda = false;
  auto p = w.make();
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().kind, ErrorKind::unsatisfied);
}

TEST(PlanMake, JobsPrecedenceFlagThenMaxJobsThenRecipeThenCpus) {
  World w("[build]\njobs = 3\n");
  EXPECT_EQ(w.make()->jobs, 3u);
  w.fm.env.set("MAX_JOBS", "5");
  EXPECT_EQ(w.make()->jobs, 5u);
  w.opts.jobs = 7;
  EXPECT_EQ(w.make()->jobs, 7u);
  World cpus;
  EXPECT_EQ(cpus.make()->jobs, 2u);
}

TEST(PlanMake, CacheFlagBeatsTheRecipeNoneIncluded) {
  using recipe::Cache;
  for (auto [recipe_value, want_unset] : {std::pair{"none", Cache::none}, std::pair{"ccache", Cache::ccache}}) {
    World w(std::string("[build]\ncache = \"") + recipe_value + "\"\n");
    EXPECT_EQ(w.make()->cache, want_unset) << "recipe " << recipe_value << ", no flag";
    for (Cache flag : {Cache::none, Cache::ccache}) {
      w.opts.cache = flag;
      auto p = w.make();
      ASSERT_TRUE(p) << p.error().render();
      EXPECT_EQ(p->cache, flag) << "recipe " << recipe_value;
      EXPECT_EQ(p->recipe.build.cache, want_unset);  // the recipe as written
    }
  }
}

TEST(PlanMake, SourceDateEpochIsClampedTo1980) {
  World w;
  w.fm.env.set("SOURCE_DATE_EPOCH", "1000");
  EXPECT_EQ(w.make()->source_date_epoch, 315532800);
  w.fm.env.set("SOURCE_DATE_EPOCH", "1700000000");
  EXPECT_EQ(w.make()->source_date_epoch, 1700000000);
}

TEST(PlanMake, CommitComesFromTheSourceInspector) {
  World w;
  w.opts.inspect_source = [](probe::Machine, const recipe::Recipe& r,
                             const std::vector<fs::path>&) -> Result<SourceInfo> {
    SourceInfo s;
    s.root = *r.source.path;
    s.commit = "8cd046f0123456789abcdef0123456789abcdef0";
    s.dirty = true;
    s.commit_time = 1600000000;
    return s;
  };
  auto p = w.make();
  ASSERT_TRUE(p) << p.error().render();
  EXPECT_EQ(p->wheel_version, "0.1.0+cu13.g8cd046f.dirty");
  EXPECT_EQ(p->source_date_epoch, 1600000000);
  EXPECT_TRUE(has(p->notes, "SOURCE_DATE_EPOCH: 1600000000 (the commit's time)"));
  EXPECT_EQ(p->exports.at("SOURCE_DATE_EPOCH"), "1600000000");
}

// `plan` of a git source it has not cloned fetches nothing: the build will take the commit's time,
// which the plan says instead of a 1980 it would not use.
TEST(PlanMake, AGitSourceNotFetchedGetsTheCommitsTimeWhenFetched) {
  World w;
  w.opts.inspect_source = [](probe::Machine, const recipe::Recipe&,
                             const std::vector<fs::path>&) -> Result<SourceInfo> {
    SourceInfo s;
    s.not_fetched = "https://github.com/Dao-AILab/causal-conv1d at v1.5.2 (into /cache/git/causal-conv1d-3f2a)";
    return s;
  };
  auto p = w.make();
  ASSERT_TRUE(p) << p.error().render();
  EXPECT_TRUE(p->epoch_at_fetch);
  EXPECT_TRUE(has(p->notes, "SOURCE_DATE_EPOCH: the commit's time (read when the source is fetched)"));
  EXPECT_FALSE(has(p->notes, "SOURCE_DATE_EPOCH: 315532800 (default 1980-01-01)"));
  EXPECT_FALSE(p->exports.contains("SOURCE_DATE_EPOCH"));
  EXPECT_TRUE(to_json(*p)["source_date_epoch"].is_null());
  EXPECT_EQ(p->source.ops_dir, "");  // no tree yet: no folder to name
  // The environment's value is what the build uses, fetched or not.
  w.fm.env.set("SOURCE_DATE_EPOCH", "1700000000");
  auto set = w.make();
  ASSERT_TRUE(set) << set.error().render();
  EXPECT_FALSE(set->epoch_at_fetch);
  EXPECT_TRUE(has(set->notes, "SOURCE_DATE_EPOCH: 1700000000 (environment)"));
  EXPECT_EQ(set->exports.at("SOURCE_DATE_EPOCH"), "1700000000");
  EXPECT_EQ(to_json(*set)["source_date_epoch"], 1700000000);
}

// A project's own setup.py (no op.toml tree, no op_builder/) is told nothing of DeepSpeed: no
// DS_* variable, no ops folder, and torch's minor CUDA difference in PyTorch's words alone.
TEST(PlanMake, AProjectWithoutAnOpTreeHearsNothingOfDeepSpeed) {
  World w;
  w.fm.fs.add_file("/p/recipe.toml",
                   "[package]\nname = \"proj\"\nversion = \"1.0.0\"\n[build]\nbackend = \"command\"\n"
                   "command = [\"python3\", \"setup.py\", \"bdist_wheel\"]\n");
  w.fm.fs.add_file("/p/setup.py", "");
  w.opts.inspect_source = nullptr;
  cuda::TorchInfo torch;
  torch.python = "python3";
  torch.torch_version = "2.15.0+cu132";
  torch.cuda = Version{13, 2};
  w.torch = torch;
  auto p = w.make("/p/recipe.toml");
  ASSERT_TRUE(p) << p.error().render();
  EXPECT_EQ(p->source.catalogue, Catalogue::none);
  EXPECT_EQ(p->source.ops_dir, "");
  for (const auto& [k, v] : p->exports) EXPECT_FALSE(k.starts_with("DS_")) << k << "=" << v;
  EXPECT_TRUE(p->cuda_minor_mismatch);
  EXPECT_EQ(p->warnings,
            Names{"CUDA 13.0 differs from torch's CUDA 13.2 in the minor version: accepted (PyTorch only warns)"});
  EXPECT_EQ(to_json(*p)["source"]["ops_dir"], "");
}

TEST(PlanMake, TorchCudaArchListOverridesTheRecipe) {
  World w;
  w.fm.env.set("TORCH_CUDA_ARCH_LIST", "8.0;9.0+PTX");
  auto p = w.make();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->arch.source, "TORCH_CUDA_ARCH_LIST");
  w.fm.env.set("TORCH_CUDA_ARCH_LIST", "8.6;;");
  auto bad = w.make();
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::bad_input);
  EXPECT_TRUE(bad.error().message.starts_with("environment variable TORCH_CUDA_ARCH_LIST='8.6;;' is invalid: "));
}

TEST(PlanMake, CommandBackendExportsTheCompilerRuleAndDeepSpeedSwitches) {
  // A DeepSpeed-style tree (tests/fixtures/fake_deepspeed, whose op_builder/ Debian's python3
  // reads and asks is_compatible() through the real process runner) with a command build; the
  // toolkit, the compiler (through a shim) and the architectures are the World's.
  World w;
  const auto dir = test_util::temp_dir("plan-command");
  const auto tree = std::filesystem::path(OPFORGE_TEST_FIXTURES) / "fake_deepspeed";
  test_util::spit(dir / "r.toml",
                  "[package]\nname = \"ds\"\nversion = \"0.3.0\"\n[source]\npath = \"" + tree.string() +
                      "\"\n[cuda]\npython = \"/usr/bin/python3\"\n[build]\n"
                      "backend = \"command\"\ncommand = [\"python3\", \"setup.py\", \"bdist_wheel\"]\n");
  probe::FakeEnvironment env(
      {{"PATH", "/usr/bin"}, {"DS_BUILD_CPU_ADAM", "1"}, {"OPFORGE_CACHE_DIR", (dir / "cache").string()}});
  auto real = probe::real_machine();
  w.opts.inspect_source = nullptr;  // the fixture's folder, no commit
  auto p = plan::make(probe::Machine{real.fs, real.proc, env, w.fm.dl}, dir / "r.toml", w.opts);
  ASSERT_TRUE(p) << p.error().render();
  EXPECT_EQ(p->source.catalogue, plan::Catalogue::op_builder);
  EXPECT_EQ(p->wheel_version, "0.3.0+cu13");
  const std::string shim = (dir / "build/opforge/shim").string();
  EXPECT_EQ(p->exports, (std::map<std::string, std::string>{
                            // The one compiler rule (compiler::environment): the shim first on PATH.
                            {"CC", shim + "/gcc"},
                            {"CXX", shim + "/g++"},
                            {"PATH", shim + ":/usr/local/cuda-13.0/bin:/usr/bin"},
                            {"CUDA_HOME", "/usr/local/cuda-13.0"},
                            {"TORCH_CUDA_ARCH_LIST", "8.0;9.0+PTX"},
                            {"DS_ACCELERATOR", "cuda"},
                            {"DS_ENABLE_NINJA", "1"},
                            {"DS_BUILD_STRING", "+cu13"},  // version.txt says 0.3.0
                            {"DS_BUILD_OPS", "0"},
                            {"DS_BUILD_CPU_ADAM", "1"},
                            {"DS_BUILD_FUSED_THING", "0"},
                            {"DS_BUILD_HIO", "0"},
                            {"DS_BUILD_NEVER", "0"},
                            {"MAX_JOBS", "2"},
                            {"SOURCE_DATE_EPOCH", "315532800"}}));
  std::filesystem::remove_all(dir);
}

// The same minor CUDA difference in a DeepSpeed tree: DeepSpeed's stricter check is named and told.
TEST(PlanMake, ADeepSpeedTreeIsToldToSkipItsStricterCudaCheck) {
  World w;
  const auto dir = test_util::temp_dir("plan-ds-minor");
  const auto tree = std::filesystem::path(OPFORGE_TEST_FIXTURES) / "fake_deepspeed";
  test_util::spit(dir / "r.toml",
                  "[package]\nname = \"ds\"\nversion = \"0.3.0\"\n[source]\npath = \"" + tree.string() +
                      "\"\n[cuda]\npython = \"/usr/bin/python3\"\n[build]\n"
                      "backend = \"command\"\ncommand = [\"python3\", \"setup.py\", \"bdist_wheel\"]\n");
  probe::FakeEnvironment env(
      std::map<std::string, std::string>{{"PATH", "/usr/bin"}, {"OPFORGE_CACHE_DIR", (dir / "cache").string()}});
  cuda::TorchInfo torch;
  torch.python = "/usr/bin/python3";
  torch.torch_version = "2.15.0+cu132";
  torch.cuda = Version{13, 2};
  w.torch = torch;
  auto real = probe::real_machine();
  w.opts.inspect_source = nullptr;
  auto p = plan::make(probe::Machine{real.fs, real.proc, env, w.fm.dl}, dir / "r.toml", w.opts);
  ASSERT_TRUE(p) << p.error().render();
  EXPECT_EQ(p->source.catalogue, plan::Catalogue::op_builder);
  EXPECT_EQ(p->warnings, Names{"CUDA 13.0 differs from torch's CUDA 13.2 in the minor version: accepted (PyTorch "
                               "only warns); DeepSpeed's stricter check is bypassed with DS_SKIP_CUDA_CHECK=1"});
  EXPECT_EQ(p->exports.at("DS_SKIP_CUDA_CHECK"), "1");
  EXPECT_EQ(p->exports.at("DS_BUILD_OPS"), "0");
  EXPECT_EQ(p->source.ops_dir, tree / "op_builder");
  std::filesystem::remove_all(dir);
}

TEST(PlanWheelVersion, TemplatesAndLabels) {
  recipe::Recipe r;
  cuda::Toolkit tk;
  tk.version = Version{12, 4, 0};
  SourceInfo src;
  src.commit = "abcdef0123";
  r.package.local_version = "cu{cuda_major}{cuda_minor}.g{commit}";
  EXPECT_EQ(*wheel_version(r, &tk, src), "0.1.0+cu124.gabcdef0");
  r.package.local_version = "none";
  EXPECT_EQ(*wheel_version(r, &tk, src), "0.1.0");
  r.package.local_version = "cu{cuda_major}.g{commit}";
  EXPECT_EQ(*wheel_version(r, nullptr, SourceInfo{}), "0.1.0+cpu");
  r.package.local_version = "cu{cuda_major}.g{commit}";  // no commit: that segment is dropped
  EXPECT_EQ(*wheel_version(r, &tk, SourceInfo{}), "0.1.0+cu12");
  r.package.local_version = "My-Label";
  auto bad = wheel_version(r, &tk, src);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "package.local_version gives the local version label 'My-Label', which is not [a-z0-9] "
            "segments separated by dots");
}

// The provisioned toolkit is the candidate CUDA_HOME made (cuda::Origin), not every candidate
// whose display text mentions CUDA_HOME (a pip wheel under a folder of that name).
TEST(PlanProvision, LabelsOnlyTheCandidateCudaHomeMade) {
  cuda::Resolution res;
  cuda::Candidate wheel;
  wheel.origins = {cuda::Origin::pip_wheel};
  wheel.found_by = "pip wheel in /home/CUDA_HOME/site-packages";
  cuda::Candidate named;
  named.origins = {cuda::Origin::cuda_home};
  named.found_by = "CUDA_HOME";
  res.candidates = {wheel, named};
  cuda::Provision p;
  p.requirement = "cuda-toolkit[nvcc,cudart,cccl]==13.0.2";
  label_provisioned(res, p);
  EXPECT_EQ(res.candidates[0].found_by, "pip wheel in /home/CUDA_HOME/site-packages");
  EXPECT_EQ(res.candidates[1].found_by, "provisioned from PyPI (cuda-toolkit[nvcc,cudart,cccl]==13.0.2)");
}

// A cross-built command: the build Python's configuration for the target is found in its stdlib
// (Debian's _sysconfigdata__linux_<triple>), or the build stops (exit 3) with the package to
// install; Debian's pyconfig.h needs the target's half too. `plan` only describes the torch for
// the target (nothing fetched).
TEST(PlanMake, CrossCommandFindsTheTargetsPythonConfigurationOrNamesThePackage) {
  probe::FakeMachine fm;
  fm.env.set("OPFORGE_CACHE_DIR", "/cache");
  fm.fs.add_file("/usr/bin/python3", "python 3.11", 0755);
  fm.proc.on(
      {"python3", "-c"},
      probe::ProcessResult{.exit_code = 0,
                           .out = R"({"torch": null, "locations": [], "path": [], "cflags": "", "version": [3, 11],)"
                                  R"( "include": "/usr/include/python3.11", "stdlib": "/usr/lib/python3.11"})"});
  fm.fs.add_file("/usr/include/python3.11/Python.h", "");
  fm.fs.add_file("/usr/include/python3.11/pyconfig.h",
                 "#if defined(__x86_64__) && defined(__LP64__)\n#  include <x86_64-linux-gnu/python3.11/pyconfig.h>\n"
                 "#elif defined(__aarch64__) && defined(__AARCH64EL__)\n"
                 "#  include <aarch64-linux-gnu/python3.11/pyconfig.h>\n#endif\n");
  Plan plan;
  plan.python = "python3";
  plan.recipe.build.backend = recipe::Backend::command;
  Options opts;
  opts.fetch_toolkit = false;
  ASSERT_TRUE(resolve_cross_command(fm.machine(), opts, plan));  // this machine's: nothing to do
  EXPECT_FALSE(plan.cross_command);
  plan.platform = target::find_platform("aarch64");
  auto missing = resolve_cross_command(fm.machine(), opts, plan);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::unsatisfied);
  EXPECT_EQ(missing.error().message,
            "python3 (Python 3.11) has no configuration for aarch64: "
            "/usr/lib/python3.11/_sysconfigdata__linux_aarch64-linux-gnu.py is missing; setup.py takes the extension "
            "suffix and the platform tag from it");
  EXPECT_NE(missing.error().hint.find("apt-get install libpython3.11-dev:arm64"), std::string::npos);
  fm.fs.add_file(
      "/usr/lib/python3.11/_sysconfigdata__linux_aarch64-linux-gnu.py",
      "build_time_vars = {'CC': 'aarch64-linux-gnu-gcc',\n"
      " 'EXT_SUFFIX': '.cpython-311-aarch64-linux-gnu.so',\n 'HOST_GNU_TYPE': 'aarch64-unknown-linux-gnu'}\n");
  auto headers = resolve_cross_command(fm.machine(), opts, plan);
  ASSERT_FALSE(headers);
  EXPECT_EQ(headers.error().message,
            "python headers for aarch64: /usr/include/aarch64-linux-gnu/python3.11/pyconfig.h is missing (install "
            "libpython3.11-dev:arm64, the aarch64 half of Debian's Python headers)");
  fm.fs.add_file("/usr/include/aarch64-linux-gnu/python3.11/pyconfig.h", "");
  ASSERT_TRUE(resolve_cross_command(fm.machine(), opts, plan));
  ASSERT_TRUE(plan.cross_command);
  EXPECT_EQ(plan.cross_command->sysconfig, "_sysconfigdata__linux_aarch64-linux-gnu");
  EXPECT_EQ(plan.cross_command->ext_suffix, ".cpython-311-aarch64-linux-gnu.so");
  EXPECT_EQ(plan.cross_command->host_platform, "linux-aarch64");
  EXPECT_EQ(plan.python_arch_include, "/usr/include");
  EXPECT_FALSE(plan.target_torch);  // no torch in that Python: a plain C extension needs none

  // With torch 2.15.0+cu132 in the build Python: PyPI's 2.15.0 for aarch64 and cp311, described only.
  cuda::TorchInfo torch;
  torch.torch_version = "2.15.0+cu132";
  torch.torch_dir = "/venv/lib/python3.11/site-packages/torch";
  plan.cuda.torch = torch;
  ASSERT_TRUE(resolve_cross_command(fm.machine(), opts, plan));
  ASSERT_TRUE(plan.target_torch);
  EXPECT_EQ(plan.target_torch->requirement, "torch==2.15.0");
  EXPECT_EQ(plan.target_torch->dir, "/cache/toolkits/torch-aarch64-cp311-2.15.0");
  EXPECT_EQ(plan.target_torch->torch_dir, "/cache/toolkits/torch-aarch64-cp311-2.15.0/site/torch");
  EXPECT_FALSE(plan.target_torch->present);
  EXPECT_EQ(plan.notes.back(),
            "cross: torch for aarch64: torch==2.15.0 from PyPI in /cache/toolkits/torch-aarch64-cp311-2.15.0, fetched "
            "by the build (not there yet): its headers and libraries in place of "
            "/venv/lib/python3.11/site-packages/torch's");
}

}  // namespace
}  // namespace opforge::plan

namespace opforge::plan {
namespace {

TEST(PlanMake, ArchListNoneIsAWheelWithoutGpuCodeOnPurpose) {
  World w("[arch]\nlist = \"none\"\n");
  auto p = w.make();
  ASSERT_TRUE(p) << p.error().render();
  EXPECT_TRUE(p->arch.arches.empty());
  EXPECT_EQ(p->arch.source, kNoGpuCodeSource);
  EXPECT_TRUE(p->ops[0].builds());
  EXPECT_FALSE(p->ops[1].builds());
  EXPECT_EQ(p->ops[1].said(),
            "skipped: it needs CUDA: [arch] list = \"none\": this recipe builds no GPU code; to build it, give [arch] "
            "list the GPUs' architectures (\"auto\", \"9.0\"), or do not request vecadd");
  EXPECT_EQ(p->wheel_version, "0.1.0+cpu");
  EXPECT_EQ(p->exports.count("TORCH_CUDA_ARCH_LIST"), 0u);
  EXPECT_EQ(p->exports.count("CUDA_HOME"), 0u);
  // A CUDA op asked for by name cannot be built without GPU code: said, not skipped.
  World asked("[arch]\nlist = \"none\"\n[ops]\nvecadd = true\n");
  EXPECT_FALSE(asked.make());
}

TEST(PlanMake, AProjectsUnsetCudaSwitchIsAWarningBeforeTheBuild) {
  World w;
  const auto dir = test_util::temp_dir("plan-switch");
  std::filesystem::create_directories(dir / "proj/csrc");
  test_util::spit(dir / "proj/setup.py",
                  "import os\nforce_cuda = os.getenv(\"FORCE_CUDA\", \"0\") == \"1\"\n"
                  "skip = os.getenv(\"PROJ_SKIP_CUDA_BUILD\")\n");
  test_util::spit(dir / "proj/csrc/k.cu", "");
  test_util::spit(dir / "r.toml",
                  "[package]\nname = \"proj\"\nversion = \"1.0\"\n[source]\npath = \"proj\"\n"
                  "[arch]\nlist = \"9.0\"\n[build]\nbackend = \"command\"\n"
                  "command = [\"python3\", \"setup.py\", \"bdist_wheel\"]\n");
  probe::FakeEnvironment env({{"PATH", "/usr/bin"}, {"OPFORGE_CACHE_DIR", (dir / "cache").string()}});
  auto real = probe::real_machine();
  w.opts.inspect_source = nullptr;
  auto p = plan::make(probe::Machine{real.fs, real.proc, env, w.fm.dl}, dir / "r.toml", w.opts);
  ASSERT_TRUE(p) << p.error().render();
  EXPECT_EQ(p->project_files.cuda_sources, 1u);
  const std::string warning =
      "the project reads FORCE_CUDA (setup.py:2) and this build does not set it: projects like this may compile "
      "no CUDA code without it when no GPU is visible, and a wheel without the plan's 8.0;9.0+PTX is refused; set "
      "[build.env] FORCE_CUDA = \"1\" (or [arch] list = \"none\" for a wheel without GPU code)";
  EXPECT_NE(std::find(p->warnings.begin(), p->warnings.end(), warning), p->warnings.end())
      << testing::PrintToString(p->warnings);
  // Set by [build.env]: nothing to say (and the switch that turns CUDA off is never a warning).
  test_util::spit(dir / "r.toml", test_util::slurp(dir / "r.toml") + "[build.env]\nFORCE_CUDA = \"1\"\n");
  auto set = plan::make(probe::Machine{real.fs, real.proc, env, w.fm.dl}, dir / "r.toml", w.opts);
  ASSERT_TRUE(set) << set.error().render();
  for (const auto& line : set->warnings) EXPECT_EQ(line.find("the project reads"), std::string::npos) << line;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace opforge::plan
