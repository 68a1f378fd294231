// DeepSpeed's op_builder/ as an op catalogue, on a small stand-in tree
// (tests/fixtures/fake_deepspeed: a CUDA builder, a CPU builder from op_builder/cpu, a builder whose
// is_compatible() says no, one with a custom BUILD_VAR), read by Debian's python3 (no torch needed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ops/deepspeed.h"
#include "ops/deepspeed_version.h"
#include "ops/ops.h"
#include "probe/fake_machine.h"
#include "test_util.h"

namespace sfs = std::filesystem;
using namespace opforge;

namespace {

const sfs::path kTree = sfs::path(OPFORGE_TEST_FIXTURES) / "fake_deepspeed";
const char* kPython = "/usr/bin/python3";

// Counts the processes a stage starts, running them for real.
struct CountingRunner final : probe::ProcessRunner {
  probe::ProcessRunner& real = probe::real_machine().proc;
  int runs = 0;
  Result<probe::ProcessResult> run(const probe::Command& c) override {
    ++runs;
    return real.run(c);
  }
};

const ops::Manifest* find(const std::vector<ops::Manifest>& v, const std::string& name) {
  for (auto& m : v)
    if (m.name == name) return &m;
  return nullptr;
}

sfs::path temp_dir(const std::string& tag) {
  auto d = sfs::temp_directory_path() / ("opforge-ds-" + tag + "-" + std::to_string(::getpid()));
  sfs::remove_all(d);
  sfs::create_directories(d);
  return d;
}

}  // namespace

TEST(OpsDeepspeed, CatalogueComesFromTheBuilderClassesWithoutImportingThem) {
  auto m = probe::real_machine();
  ASSERT_TRUE(ops::has_op_builder(m.fs, kTree));
  auto cat = ops::load_deepspeed_catalogue(m, kTree, kPython);
  ASSERT_TRUE(cat) << cat.error().render();
  ASSERT_EQ(cat->size(), 4u);
  auto* fused = find(*cat, "fused_thing");
  ASSERT_TRUE(fused);
  EXPECT_EQ(fused->kind, ops::Kind::cuda);  // it compiles a .cu file
  EXPECT_EQ(fused->build_var, "DS_BUILD_FUSED_THING");
  EXPECT_EQ(fused->builder_class, "op_builder.fused_thing:FusedThingBuilder");
  EXPECT_EQ(fused->sources, (std::vector<sfs::path>{"csrc/thing/frontend.cpp", "csrc/thing/kernel.cu"}));
  auto* hio = find(*cat, "host_io");
  ASSERT_TRUE(hio);
  EXPECT_EQ(hio->build_var, "DS_BUILD_HIO");  // custom, as async_io's DS_BUILD_AIO
  EXPECT_EQ(hio->kind, ops::Kind::cpu_cuda);  // a CUDAOpBuilder with only .cpp sources
  EXPECT_EQ(hio->sources.size(), 3u);         // self.lib_sources() + [...]
  auto* adam = find(*cat, "cpu_adam");
  ASSERT_TRUE(adam);
  EXPECT_EQ(adam->kind, ops::Kind::cpu);
  EXPECT_EQ(adam->builder_class, "op_builder.cpu.cpu_thing:CPUAdamBuilder");
  ASSERT_TRUE(find(*cat, "never"));
}

TEST(OpsDeepspeed, UnreadableOpBuilderIsBadInput) {
  auto dir = temp_dir("broken");
  sfs::create_directories(dir / "op_builder");
  std::ofstream(dir / "op_builder" / "builder.py") << "class OpBuilder:\n  pass\n";
  std::ofstream(dir / "op_builder" / "broken.py") << "class BrokenBuilder(OpBuilder:\n";
  auto cat = ops::load_deepspeed_catalogue(probe::real_machine(), dir, kPython);
  ASSERT_FALSE(cat);
  EXPECT_EQ(cat.error().kind, ErrorKind::bad_input);
  EXPECT_NE(cat.error().message.find("cannot read DeepSpeed's op builders"), std::string::npos) << cat.error().message;
  EXPECT_NE(cat.error().message.find("SyntaxError"), std::string::npos) << cat.error().message;
  sfs::remove_all(dir);
}

TEST(OpsDeepspeed, CompatibilityIsDeepSpeedsOwnVerdictAskedOnceAndCached) {
  auto real = probe::real_machine();
  CountingRunner runner;
  probe::Machine m{real.fs, runner, real.env, real.dl};
  auto cat = ops::load_deepspeed_catalogue(m, kTree, kPython);
  ASSERT_TRUE(cat);
  auto cache = temp_dir("compat");
  ops::CompatibilityQuery q{kTree, kPython, *cat, {{"PATH", "/usr/bin:/bin"}}, cache, "torch-id"};
  runner.runs = 0;
  auto v = ops::deepspeed_compatibility(m, q);
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(runner.runs, 1);  // one Python run for every op
  EXPECT_TRUE((*v)["fused_thing"].ok);
  EXPECT_TRUE((*v)["cpu_adam"].ok);
  EXPECT_FALSE((*v)["never"].ok);
  EXPECT_EQ((*v)["never"].reason, "never requires libnever-dev, which was not found");
  auto again = ops::deepspeed_compatibility(m, q);
  ASSERT_TRUE(again);
  EXPECT_EQ(runner.runs, 1);  // answered from the cache
  EXPECT_EQ((*again)["never"].reason, (*v)["never"].reason);
  q.torch_identity = "another torch";
  ASSERT_TRUE(ops::deepspeed_compatibility(m, q));
  EXPECT_EQ(runner.runs, 2);  // another torch, another answer
  sfs::remove_all(cache);
}

// One spelling of each op kind: the probe's catalogue uses kind_name's, and an unknown one is a CPU op.
TEST(OpsDeepspeed, KindsAreSpeltAsKindNamePrintsThem) {
  for (auto k : {ops::Kind::cpu, ops::Kind::cuda, ops::Kind::cpu_cuda})
    EXPECT_EQ(ops::kind_from_name(ops::kind_name(k)), k);
  EXPECT_EQ(ops::kind_from_name("cpu_cuda"), std::nullopt);
  auto cat = ops::parse_deepspeed_catalogue(kTree, R"({"ops": [
    {"name": "a", "build_var": "DS_BUILD_A", "class": "op_builder.a:ABuilder", "kind": "cpu+cuda", "sources": []},
    {"name": "b", "build_var": "DS_BUILD_B", "class": "op_builder.b:BBuilder", "kind": "odd", "sources": []}]})");
  ASSERT_TRUE(cat) << cat.error().render();
  ASSERT_EQ(cat->size(), 2u);
  EXPECT_EQ((*cat)[0].kind, ops::Kind::cpu_cuda);
  EXPECT_EQ((*cat)[1].kind, ops::Kind::cpu);
}

TEST(OpsDeepspeed, DecideUsesTheCatalogueVariablesAndVerdicts) {
  probe::FakeFileSystem fs;
  probe::FakeProcessRunner proc;
  probe::FakeDynamicLoader dl;
  auto cat = ops::parse_deepspeed_catalogue(kTree, R"({"ops": [
    {"name": "cpu_adam", "build_var": "DS_BUILD_CPU_ADAM", "class": "op_builder.cpu.a:CPUAdamBuilder", "kind": "cpu", "sources": []},
    {"name": "fused_thing", "build_var": "DS_BUILD_FUSED_THING", "class": "op_builder.f:FusedThingBuilder", "kind": "cuda", "sources": null},
    {"name": "never", "build_var": "DS_BUILD_NEVER", "class": "op_builder.never:NeverBuilder", "kind": "cpu", "sources": []}]})");
  ASSERT_TRUE(cat) << cat.error().render();
  ops::DecideContext ctx;
  std::vector<std::string> asked;
  ctx.compatibility = [&](const std::vector<ops::Manifest>& ask) -> Result<std::map<std::string, ops::Compatibility>> {
    std::map<std::string, ops::Compatibility> out;
    for (auto& a : ask) {
      asked.push_back(a.name);
      out[a.name] =
          a.name == "never" ? ops::Compatibility{false, "never requires libnever-dev"} : ops::Compatibility{true, ""};
    }
    return out;
  };
  ctx.default_off = true;
  recipe::Recipe r;

  {  // DS_BUILD_* select by the catalogue's variables; an incompatible explicit request is exit 3
    probe::FakeEnvironment env(std::map<std::string, std::string>{{"DS_BUILD_CPU_ADAM", "1"}, {"DS_BUILD_NEVER", "1"}});
    auto d = ops::decide(probe::Machine{fs, proc, env, dl}, *cat, r, ctx);
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().kind, ErrorKind::unsatisfied);
    EXPECT_NE(d.error().message.find("NeverBuilder.is_compatible() says no: never requires libnever-dev"),
              std::string::npos)
        << d.error().message;
    EXPECT_EQ(asked, (std::vector<std::string>{"cpu_adam", "never"}));  // only what was asked for
  }
  {  // "auto" ops that DeepSpeed calls incompatible are skipped, with its reason
    probe::FakeEnvironment env(std::map<std::string, std::string>{});
    r.ops = {{"cpu_adam", recipe::OpRequest::on}, {"never", recipe::OpRequest::automatic}};
    auto d = ops::decide(probe::Machine{fs, proc, env, dl}, *cat, r, ctx);
    ASSERT_TRUE(d) << d.error().render();
    EXPECT_TRUE((*d)[0].builds());
    EXPECT_FALSE((*d)[2].builds());
    EXPECT_NE((*d)[2].said().find("skipped: NeverBuilder.is_compatible() says no"), std::string::npos)
        << (*d)[2].reason;
  }
  {  // a misspelt op: exit 2 with a suggestion from the catalogue
    probe::FakeEnvironment env(std::map<std::string, std::string>{{"DS_BUILD_FUSED_THNG", "1"}});
    auto d = ops::decide(probe::Machine{fs, proc, env, dl}, *cat, recipe::Recipe{}, ctx);
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().kind, ErrorKind::bad_input);
    EXPECT_NE(d.error().message.find("did you mean DS_BUILD_FUSED_THING?"), std::string::npos) << d.error().message;
  }
  {  // neither [ops] nor DS_BUILD_*: DeepSpeed's default, nothing prebuilt
    probe::FakeEnvironment env(std::map<std::string, std::string>{});
    auto d = ops::decide(probe::Machine{fs, proc, env, dl}, *cat, recipe::Recipe{}, ctx);
    ASSERT_TRUE(d);
    for (auto& op : *d) EXPECT_FALSE(op.builds()) << op.manifest.name;
  }
  {  // a CUDA op without a toolkit is not even asked about
    probe::FakeEnvironment env(std::map<std::string, std::string>{{"DS_BUILD_FUSED_THING", "1"}});
    auto no_cuda = ctx;
    no_cuda.cuda_unavailable = "no CUDA toolkit found";
    asked.clear();
    auto d = ops::decide(probe::Machine{fs, proc, env, dl}, *cat, recipe::Recipe{}, no_cuda);
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().kind, ErrorKind::unsatisfied);
    EXPECT_TRUE(asked.empty());
  }
}

TEST(OpsDeepspeed, TheProbeConstructsEachCompatibleOpsExtensionAndNamesWhatIsMissing) {
  // tests/fixtures/every_op_deepspeed: needs_kernels imports dskernels (deepspeed-kernels) while
  // setup.py constructs its extension, as DeepSpeed's ragged_ops and cutlass_ops do.
  const sfs::path tree = sfs::path(OPFORGE_TEST_FIXTURES) / "every_op_deepspeed";
  auto m = probe::real_machine();
  auto cat = ops::load_deepspeed_catalogue(m, tree, kPython);
  ASSERT_TRUE(cat) << cat.error().render();
  ASSERT_EQ(cat->size(), 4u);
  EXPECT_EQ(find(*cat, "needs_kernels")->kind, ops::Kind::cpu_cuda);
  EXPECT_EQ(find(*cat, "broken_cuda")->kind, ops::Kind::cuda);
  ops::CompatibilityQuery q{tree, kPython, *cat, {{"PATH", "/usr/bin:/bin"}}, {}, "torch-id"};
  auto v = ops::deepspeed_compatibility(m, q);
  ASSERT_TRUE(v) << v.error().render();
  auto& kernels = (*v)["needs_kernels"];
  EXPECT_FALSE(kernels.ok);
  EXPECT_TRUE(kernels.constructed);
  EXPECT_EQ(kernels.module, "dskernels");
  EXPECT_EQ(kernels.fix, "pip install deepspeed-kernels (it provides the module 'dskernels')");
  EXPECT_EQ(kernels.reason,
            "NeedsKernelsBuilder.builder() raised ModuleNotFoundError: No module named 'dskernels' "
            "(at op_builder/needs_kernels.py:16)");
  // The broken op constructs fine: only its compile fails.
  EXPECT_TRUE((*v)["broken_cuda"].ok);
  EXPECT_TRUE((*v)["good_cuda"].ok);
  EXPECT_TRUE((*v)["good_cpu"].ok);
  // The constructed extensions' sources, as setup.py will compile them.
  EXPECT_FALSE((*v)["good_cuda"].sources.empty());
  EXPECT_TRUE(kernels.sources.empty());
  // Its name as TORCH_EXTENSION_NAME and its C++ files' flags (an include folder of the tree by
  // its path in the tree: the build compiles a copy).
  EXPECT_EQ((*v)["good_cpu"].extension, "good_cpu_op");
  EXPECT_EQ((*v)["good_cpu"].host_args, (std::vector<std::string>{"-Icsrc/good_cpu", "-O2", "-std=c++17"}));
  EXPECT_EQ((*v)["good_cuda"].host_args, (std::vector<std::string>{"-O2", "-std=c++17"}));
}

TEST(OpsDeepspeed, ABuiltOpTakesTheSourcesOfItsConstructedExtension) {
  probe::FakeFileSystem fs;
  probe::FakeProcessRunner proc;
  probe::FakeDynamicLoader dl;
  // Sources computed at run time: the builder's code names none.
  auto cat = ops::parse_deepspeed_catalogue(kTree, R"({"ops": [
    {"name": "core", "build_var": "DS_BUILD_CORE", "class": "op_builder.c:CoreBuilder", "kind": "cuda", "sources": null}]})");
  ASSERT_TRUE(cat);
  ASSERT_TRUE(cat->front().sources.empty());
  ops::DecideContext ctx;
  ctx.default_off = true;
  ctx.compatibility = [&](const std::vector<ops::Manifest>&) -> Result<std::map<std::string, ops::Compatibility>> {
    ops::Compatibility c{true, ""};
    c.sources = {"csrc/core/a.cu", "csrc/core/b.cpp"};
    c.extension = "core_op";
    c.host_args = {"-Icsrc/includes", "-O3"};
    return std::map<std::string, ops::Compatibility>{{"core", c}};
  };
  probe::FakeEnvironment env(std::map<std::string, std::string>{{"DS_BUILD_OPS", "1"}});
  auto d = ops::decide(probe::Machine{fs, proc, env, dl}, *cat, recipe::Recipe{}, ctx);
  ASSERT_TRUE(d) << d.error().render();
  ASSERT_TRUE((*d)[0].builds());
  EXPECT_EQ((*d)[0].manifest.sources, (std::vector<ops::fs::path>{"csrc/core/a.cu", "csrc/core/b.cpp"}));
  EXPECT_EQ((*d)[0].manifest.extension_name, "core_op");
  EXPECT_EQ((*d)[0].manifest.host_args, (std::vector<std::string>{"-Icsrc/includes", "-O3"}));
}

TEST(OpsDeepspeed, AnOpWhoseExtensionCannotBeConstructedIsSkippedOrUnsatisfied) {
  probe::FakeFileSystem fs;
  probe::FakeProcessRunner proc;
  probe::FakeDynamicLoader dl;
  auto cat = ops::parse_deepspeed_catalogue(kTree, R"({"ops": [
    {"name": "good", "build_var": "DS_BUILD_GOOD", "class": "op_builder.good:GoodBuilder", "kind": "cpu", "sources": []},
    {"name": "ragged", "build_var": "DS_BUILD_RAGGED", "class": "op_builder.r:RaggedBuilder", "kind": "cpu", "sources": []}]})");
  ASSERT_TRUE(cat);
  ops::DecideContext ctx;
  ctx.default_off = true;
  ctx.compatibility = [&](const std::vector<ops::Manifest>& ask) -> Result<std::map<std::string, ops::Compatibility>> {
    std::map<std::string, ops::Compatibility> out;
    for (auto& a : ask) {
      ops::Compatibility c{a.name == "good", ""};
      if (a.name == "ragged") {
        c.reason = "RaggedBuilder.builder() raised ModuleNotFoundError: No module named 'dskernels'";
        c.constructed = true;
        c.fix = "pip install deepspeed-kernels (it provides the module 'dskernels')";
      }
      out[a.name] = c;
    }
    return out;
  };
  {  // DS_BUILD_OPS=1: skipped and named, with the package
    probe::FakeEnvironment env(std::map<std::string, std::string>{{"DS_BUILD_OPS", "1"}});
    auto d = ops::decide(probe::Machine{fs, proc, env, dl}, *cat, recipe::Recipe{}, ctx);
    ASSERT_TRUE(d) << d.error().render();
    EXPECT_TRUE((*d)[0].builds());
    EXPECT_FALSE((*d)[0].required);
    EXPECT_FALSE((*d)[1].builds());
    EXPECT_EQ((*d)[1].said(),
              "skipped: its extension cannot be constructed: RaggedBuilder.builder() raised ModuleNotFoundError: No "
              "module named 'dskernels'; to build it, pip install deepspeed-kernels (it provides the module "
              "'dskernels'), or do not request ragged (DS_BUILD_RAGGED=0)");
  }
  {  // requested by name: exit 3 before anything compiles
    probe::FakeEnvironment env(std::map<std::string, std::string>{{"DS_BUILD_RAGGED", "1"}});
    auto d = ops::decide(probe::Machine{fs, proc, env, dl}, *cat, recipe::Recipe{}, ctx);
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().kind, ErrorKind::unsatisfied);
    EXPECT_NE(d.error().message.find("op 'ragged' was requested (DS_BUILD_RAGGED=1) but cannot be built: its "
                                     "extension cannot be constructed"),
              std::string::npos)
        << d.error().message;
    EXPECT_NE(d.error().hint.find("pip install deepspeed-kernels"), std::string::npos) << d.error().hint;
  }
}

// installed_ops= as DeepSpeed 0.19.8's setup.py writes it (one dict literal), read in one pass.
TEST(OpsDeepSpeed, InstalledOpsFromTheVersionFile) {
  const std::string text =
      "version='0.19.8'\ngit_hash='unknown'\ngit_branch='unknown'\n"
      "installed_ops={'async_io': 1, 'fused_adam': True, 'cpu_adam': 1, 'utils': False, 'gds': 0, "
      "\"pin_memory\" :True, 'bad name': 1, '': 1}\n"
      "accelerator_name='cuda'\n";
  EXPECT_EQ(ops::deepspeed_installed_ops(text),
            (std::vector<std::string>{"async_io", "cpu_adam", "fused_adam", "pin_memory"}));
  EXPECT_TRUE(ops::deepspeed_installed_ops("installed_ops={}\n").empty());
  EXPECT_TRUE(ops::deepspeed_installed_ops("other={'x': 1}\n").empty());
  // One long line (no stack to overflow): every entry found.
  std::string long_line = "installed_ops={";
  for (int k = 0; k < 20000; ++k) long_line += "'op" + std::to_string(k) + "': 1, ";
  long_line += "}\n";
  EXPECT_EQ(ops::deepspeed_installed_ops(long_line).size(), 20000u);
}
