// Op selection (DeepSpeed's DS_BUILD_* rules and the recipe's [ops]), compatibility, and the
// probe cache — on a fake machine whose compiler answers from a table.
#include <gtest/gtest.h>

#include "ops/ops.h"
#include "probe/fake_machine.h"

namespace opforge::ops {
namespace {

Manifest op(std::string name, Kind kind = Kind::cpu, std::vector<Probe> probes = {}) {
  Manifest m;
  m.name = name;
  m.kind = kind;
  m.build_var = "DS_BUILD_" + std::string(name == "aio"        ? "AIO"
                                          : name == "cpu_adam" ? "CPU_ADAM"
                                          : name == "utils"    ? "UTILS"
                                                               : "OVERFLOW");
  m.sources = {"a.cpp"};
  m.probes = std::move(probes);
  return m;
}

Probe libaio() {
  return Probe{"libaio",
               "libaio.h",
               "io_submit(0, 0, 0);",
               {"aio"},
               {{"apt", "libaio-dev"}, {"yum", "libaio-devel"}, {"pacman", "libaio"}}};
}

struct World {
  probe::FakeMachine fm;
  std::vector<Manifest> manifests = {op("aio", Kind::cpu, {libaio()}), op("cpu_adam"), op("overflow", Kind::cuda),
                                     op("utils")};
  recipe::Recipe recipe;
  DecideContext ctx;
  World() {
    fm.fs.add_file("/usr/bin/c++", "compiler v1", 0755);
    fm.env.set("PATH", "/usr/bin");
    fm.proc.on({"/usr/bin/c++"}, probe::ProcessResult{0, 0, false, "", ""});
    ctx.probe_compiler = "c++";
    ctx.cache_dir = "/cache";
  }
  std::vector<std::string> built() {
    auto d = decide(fm.machine(), manifests, recipe, ctx);
    EXPECT_TRUE(d.has_value()) << (d ? "" : d.error().render());
    std::vector<std::string> out;
    if (d)
      for (auto& x : *d)
        if (x.builds()) out.push_back(x.manifest.name);
    return out;
  }
};

using Names = std::vector<std::string>;

TEST(OpsDecide, NoVariablesAndNoOpsTableBuildsEverythingCompatible) {
  World w;
  w.ctx.cuda_unavailable = "no CUDA toolkit found";
  EXPECT_EQ(w.built(), (Names{"aio", "cpu_adam", "utils"}));
}

TEST(OpsDecide, NamedVariablesSelectExactlyThoseOps) {
  World w;
  w.fm.env.set("DS_BUILD_CPU_ADAM", "1");
  w.fm.env.set("DS_BUILD_UTILS", "1");
  EXPECT_EQ(w.built(), (Names{"cpu_adam", "utils"}));
}

TEST(OpsDecide, BuildOpsOneWithOneZeroBuildsAllButThat) {
  World w;
  w.fm.env.set("DS_BUILD_OPS", "1");
  w.fm.env.set("DS_BUILD_AIO", "0");
  EXPECT_EQ(w.built(), (Names{"cpu_adam", "overflow", "utils"}));
}

TEST(OpsDecide, BuildOpsZeroBuildsNothing) {
  World w;
  w.fm.env.set("DS_BUILD_OPS", "0");
  EXPECT_EQ(w.built(), Names{});
}

TEST(OpsDecide, EmptyValueCountsAsUnset) {
  World w;
  w.fm.env.set("DS_BUILD_OPS", "");
  w.fm.env.set("DS_BUILD_UTILS", "1");
  EXPECT_EQ(w.built(), Names{"utils"});
}

TEST(OpsDecide, EnvironmentBeatsRecipe) {
  World w;
  w.recipe.ops = {{"aio", recipe::OpRequest::on}, {"utils", recipe::OpRequest::on}};
  w.fm.env.set("DS_BUILD_CPU_ADAM", "1");
  EXPECT_EQ(w.built(), Names{"cpu_adam"});
}

TEST(OpsDecide, RecipeOpsTableWithUnlistedOpsOff) {
  World w;
  w.recipe.ops = {
      {"aio", recipe::OpRequest::automatic}, {"utils", recipe::OpRequest::on}, {"cpu_adam", recipe::OpRequest::off}};
  auto d = decide(w.fm.machine(), w.manifests, w.recipe, w.ctx);
  ASSERT_TRUE(d);
  EXPECT_EQ((*d)[2].manifest.name, "overflow");
  EXPECT_FALSE((*d)[2].builds());
  EXPECT_EQ((*d)[2].requested_by, "recipe: not listed in [ops]");
  EXPECT_EQ(w.built(), (Names{"aio", "utils"}));
}

TEST(OpsDecide, AutoCudaOpWithoutToolkitIsSkippedWithReason) {
  World w;
  w.fm.env.set("DS_BUILD_OPS", "1");
  w.ctx.cuda_unavailable = "no CUDA toolkit found";
  auto d = decide(w.fm.machine(), w.manifests, w.recipe, w.ctx);
  ASSERT_TRUE(d);
  EXPECT_FALSE((*d)[2].builds());
  EXPECT_EQ((*d)[2].said(),
            "skipped: it needs CUDA: no CUDA toolkit found; to build it, install a CUDA toolkit or "
            "set CUDA_HOME, or do not request overflow");
}

TEST(OpsDecide, ExplicitCudaOpWithoutToolkitIsUnsatisfied) {
  World w;
  w.fm.env.set("DS_BUILD_OVERFLOW", "1");
  w.ctx.cuda_unavailable = "no CUDA toolkit found";
  auto d = decide(w.fm.machine(), w.manifests, w.recipe, w.ctx);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().kind, ErrorKind::unsatisfied);
  EXPECT_EQ(d.error().message,
            "op 'overflow' was requested (DS_BUILD_OVERFLOW=1) but cannot be built: it needs CUDA: "
            "no CUDA toolkit found");
}

TEST(OpsDecide, FailedProbeNamesPackagesPerDistribution) {
  World w;
  w.fm.proc.on({"/usr/bin/c++"}, probe::ProcessResult{1, 0, false, "", "cannot find -laio"});
  w.recipe.ops = {{"aio", recipe::OpRequest::automatic}};
  auto d = decide(w.fm.machine(), w.manifests, w.recipe, w.ctx);
  ASSERT_TRUE(d);
  EXPECT_FALSE((*d)[0].builds());
  EXPECT_EQ((*d)[0].said(),
            "skipped: libaio not found (compiling and linking `io_submit(0, 0, 0);` with -laio "
            "failed: cannot find -laio); to build it, install it (apt-get install libaio-dev, yum install "
            "libaio-devel, pacman -S libaio), or set CFLAGS/LDFLAGS to its include and lib folders "
            "(-I... / -L...)");
  w.recipe.ops["aio"] = recipe::OpRequest::on;
  auto e = decide(w.fm.machine(), w.manifests, w.recipe, w.ctx);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().kind, ErrorKind::unsatisfied);
}

TEST(OpsDecide, AProbeBrokenByTheUsersFlagsSaysSoNotLibraryNotFound) {
  World w;
  w.fm.env.set("CFLAGS", "-fnonsense-flag");
  w.fm.proc.on(
      {"/usr/bin/c++"},
      probe::ProcessResult{1, 0, false, "", "c++: error: unrecognized command-line option '-fnonsense-flag'\n"});
  w.recipe.ops = {{"aio", recipe::OpRequest::automatic}};
  auto d = decide(w.fm.machine(), w.manifests, w.recipe, w.ctx);
  ASSERT_TRUE(d);
  EXPECT_FALSE((*d)[0].builds());
  EXPECT_EQ((*d)[0].said(),
            "skipped: cannot look for libaio: the C++ compiler fails on an empty program with the flags of "
            "CFLAGS/CXXFLAGS/LDFLAGS ('-fnonsense-flag'): c++: error: unrecognized command-line option "
            "'-fnonsense-flag'; to build it, fix CFLAGS, CXXFLAGS or LDFLAGS (or unset them)");
  ASSERT_EQ(w.fm.proc.calls().size(), 2u);  // the library's probe, then the empty program
  EXPECT_EQ(w.fm.proc.calls()[1].argv, (Names{"/usr/bin/c++", "probe.cpp", "-o", "probe", "-fnonsense-flag"}));
}

TEST(OpsDecide, ProbeRunsTheCompilerWithTheLibraryAndUserFlags) {
  World w;
  w.fm.env.set("LDFLAGS", "-L/opt/aio/lib");
  w.fm.env.set("DS_BUILD_AIO", "1");
  EXPECT_EQ(w.built(), Names{"aio"});
  ASSERT_EQ(w.fm.proc.calls().size(), 1u);
  EXPECT_EQ(w.fm.proc.calls()[0].argv, (Names{"/usr/bin/c++", "probe.cpp", "-o", "probe", "-L/opt/aio/lib", "-laio"}));
  EXPECT_EQ(w.fm.fs.nodes().count("/tmp/opforge-probe-1"), 0u) << "probe folder removed";
}

TEST(OpsDecide, SecondDecideAnswersProbesFromTheCache) {
  World w;
  w.fm.env.set("DS_BUILD_AIO", "1");
  EXPECT_EQ(w.built(), Names{"aio"});
  EXPECT_EQ(w.fm.proc.calls().size(), 1u);
  EXPECT_EQ(w.built(), Names{"aio"});
  EXPECT_EQ(w.fm.proc.calls().size(), 1u) << "no compiler run on the second plan";
  // A different compiler binary (same path, new contents) is a cache miss.
  w.fm.fs.add_file("/usr/bin/c++", "compiler v2", 0755);
  EXPECT_EQ(w.built(), Names{"aio"});
  EXPECT_EQ(w.fm.proc.calls().size(), 2u);
}

TEST(OpsDecide, NonIntegerVariableIsBadInput) {
  World w;
  w.fm.env.set("DS_BUILD_AIO", "yes");
  auto d = decide(w.fm.machine(), w.manifests, w.recipe, w.ctx);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(d.error().message, "environment variable DS_BUILD_AIO='yes' is not an integer");
}

TEST(OpsDecide, VariableNamingNoOpSuggestsOne) {
  World w;
  w.fm.env.set("DS_BUILD_CPUADAM", "1");
  auto d = decide(w.fm.machine(), w.manifests, w.recipe, w.ctx);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().message, "environment variable DS_BUILD_CPUADAM names no op; did you mean DS_BUILD_CPU_ADAM?");
}

TEST(OpsDecide, CacheDirectoryFollowsEnvironment) {
  probe::FakeEnvironment env(std::map<std::string, std::string>{{"HOME", "/home/u"}});
  EXPECT_EQ(default_cache_dir(env), "/home/u/.cache/opforge");
  env.set("XDG_CACHE_HOME", "/xdg");
  EXPECT_EQ(default_cache_dir(env), "/xdg/opforge");
  env.set("OPFORGE_CACHE_DIR", "/o");
  EXPECT_EQ(default_cache_dir(env), "/o");
}

TEST(OpsManifest, ParsesTheFixtureAioOp) {
  const char* text = R"(name = "aiolike"
kind = "cpu"
build_var = "DS_BUILD_AIO"
sources = ["aio.cpp"]
[source_flags]
"aio.cpp" = ["-O3"]
[[probe]]
name = "libaio"
header = "libaio.h"
code = "io_submit(0, 0, 0);"
libraries = ["aio"]
packages = { apt = "libaio-dev" }
)";
  auto m = parse_manifest("/ops/aiolike/op.toml", text);
  ASSERT_TRUE(m) << m.error().render();
  EXPECT_EQ(m->name, "aiolike");
  EXPECT_EQ(m->build_var, "DS_BUILD_AIO");
  EXPECT_EQ(m->dir, "/ops/aiolike");
  EXPECT_EQ(m->library_name, "libopforge_aiolike.so");
  ASSERT_EQ(m->probes.size(), 1u);
  EXPECT_EQ(m->probes[0].libraries, Names{"aio"});
  EXPECT_EQ(m->probes[0].packages.at("apt"), "libaio-dev");
  EXPECT_EQ(m->source_flags.at("aio.cpp"), Names{"-O3"});
}

TEST(OpsManifest, ErrorsPointAtTheLine) {
  auto m = parse_manifest("op.toml", "name = \"x\"\nkind = \"gpu\"\nsources = [\"a.cpp\"]\n");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().render(),
            "op.toml:2:8: kind must be \"cpu\" or \"cuda\", not \"gpu\"\n  kind = \"gpu\"\n         ^");
  auto n = parse_manifest("op.toml", "name = \"x\"\nkind = \"cpu\"\nsources = [\"a.cu\"]\n");
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().message, "source 'a.cu' is CUDA but kind is \"cpu\"");
  auto u = parse_manifest("op.toml", "name = \"x\"\nkind = \"cpu\"\nsource = [\"a.cpp\"]\n");
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().message, "unknown key 'source' in op.toml; did you mean 'sources'?");
}

TEST(OpsManifest, PythonExtensionTable) {
  const std::string head = "name = \"x\"\nkind = \"cpu\"\nsources = [\"a.cpp\"]\n[python_extension]\n";
  auto m = parse_manifest("/ops/x/op.toml", head + "name = \"_x_hooks\"\nsources = [\"h.c\"]\nlimited_api = \"3.9\"\n");
  ASSERT_TRUE(m) << m.error().render();
  ASSERT_TRUE(m->python_extension);
  EXPECT_EQ(m->python_extension->file_name(), "_x_hooks.abi3.so");
  EXPECT_EQ(m->python_extension->sources, std::vector<fs::path>{"h.c"});
  EXPECT_EQ(m->python_extension->limited_api_macro(), "0x03090000");
  auto d = parse_manifest("/ops/x/op.toml", head + "name = \"_h\"\nsources = [\"h.c\"]\n");
  ASSERT_TRUE(d) << d.error().render();
  EXPECT_EQ(d->python_extension->limited_api_macro(), "0x03080000");  // the default floor
  EXPECT_FALSE(
      parse_manifest("/ops/x/op.toml", "name = \"x\"\nkind = \"cpu\"\nsources = [\"a.cpp\"]\n")->python_extension);
  auto bad = parse_manifest("op.toml", head + "name = \"_h\"\nsources = [\"h.c\"]\nlimited_api = \"2.7\"\n");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "limited_api '2.7' is not a Python 3 version");
  auto name = parse_manifest("op.toml", head + "name = \"Bad-Name\"\nsources = [\"h.c\"]\n");
  ASSERT_FALSE(name);
  EXPECT_EQ(name.error().message, "extension name 'Bad-Name' must match [a-z_][a-z0-9_]*");
  auto cu = parse_manifest("op.toml", head + "name = \"_h\"\nsources = [\"h.cu\"]\n");
  ASSERT_FALSE(cu);
  EXPECT_EQ(cu.error().message, "extension source 'h.cu' is not .c, .cpp or .cc");
  auto key = parse_manifest("op.toml", head + "name = \"_h\"\nsources = [\"h.c\"]\nfloor = 1\n");
  ASSERT_FALSE(key);
}

TEST(OpsManifest, LoadsTheFixtureOpsFromDisk) {
  // The real file system over tests/fixtures: the manifests the CLI tests use.
  probe::Machine m = probe::real_machine();
  auto all = load_manifests(m, std::string(OPFORGE_TEST_FIXTURES) + "/ops");
  ASSERT_TRUE(all) << all.error().render();
  Names names;
  for (auto& x : *all) names.push_back(x.name);
  EXPECT_EQ(names, (Names{"aiolike", "cpuop", "nolib", "vecadd"}));
}

TEST(OpsDecide, RealLibaioProbeLinksOnThisMachine) {
  // The real compiler and the real libaio (installed by the set-up script).
  probe::Machine m = probe::real_machine();
  DecideContext ctx;
  ctx.probe_compiler = "g++";
  auto ok = run_probe(m, libaio(), ctx);
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->ok) << ok->output;
  Probe missing{"nothing", "", "return 0;", {"opforge_does_not_exist"}, {}};
  auto bad = run_probe(m, missing, ctx);
  ASSERT_TRUE(bad);
  EXPECT_FALSE(bad->ok);
  EXPECT_NE(bad->output.find("opforge_does_not_exist"), std::string::npos) << bad->output;
}

}  // namespace
}  // namespace opforge::ops
