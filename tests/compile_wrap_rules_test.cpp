// The wrappers' rules as pure functions (compile/wrap/nvcc_args.h, host_args.h), without a shell,
// and `opforge __nvcc` / `__host` on a rule they cannot read. The wrapper scripts' behaviour end to
// end is CompileCommandBackend.NvccWrapper*'s and HostWrappers*'s.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "compile/wrap/host_args.h"
#include "compile/wrap/nvcc_args.h"
#include "probe/machine.h"

namespace opforge {
namespace {

namespace fs = std::filesystem;
using compile::NvccRule;
using compile::rewrite_nvcc;
using V = std::vector<std::string>;

TEST(NvccArgs, KeepsTheProjectsOptionsWithoutAnArchListAndLogsThem) {
  const NvccRule rule{.nvcc = "/cuda/bin/nvcc"};
  auto call = rewrite_nvcc({"-gencode", "arch=compute_75,code=sm_75", "-lineinfo", "-arch=sm_80", "-c", "a.cu"}, rule);
  EXPECT_EQ(call.argv, (V{"/cuda/bin/nvcc", "-gencode", "arch=compute_75,code=sm_75", "-arch=sm_80", "-c", "a.cu"}));
  EXPECT_EQ(call.asked, " -gencode arch=compute_75,code=sm_75 -arch=sm_80");
  EXPECT_EQ(call.error, "");
}

TEST(NvccArgs, PutsThePlansArchitecturesInPlaceAndSeedsAndNamesEachObject) {
  const NvccRule rule{.nvcc = "/cuda/bin/nvcc",
                      .gencode = {"-gencode=arch=compute_90,code=sm_90"},
                      .random_seed = true,
                      .stable_names = true};
  auto call =
      rewrite_nvcc({"--generate-code=arch=compute_80,code=[compute_80,sm_80]", "-c", "k.cu", "-o", "o/k.o"}, rule);
  EXPECT_EQ(call.argv,
            (V{"/cuda/bin/nvcc", "-c", "k.cu", "-o", "o/k.o", "-gencode=arch=compute_90,code=sm_90",
               "-frandom-seed=k.o", "-Xcicc=--orig_src_path_name=k.o", "-Xcudafe=--orig_src_path_name=k.o"}));
  // A seed or name of the project's own is kept, not doubled; nothing asked: nothing added.
  call = rewrite_nvcc({"-c", "k.cu", "-o", "k.o", "-frandom-seed=mine"}, rule);
  EXPECT_EQ(call.argv.back(), "-Xcudafe=--orig_src_path_name=k.o");
  EXPECT_EQ(std::count(call.argv.begin(), call.argv.end(), "-frandom-seed=mine"), 1);
  EXPECT_EQ(std::count_if(call.argv.begin(), call.argv.end(), [](auto& a) { return a.starts_with("-gencode"); }), 0);
}

TEST(NvccArgs, RefusesACompileOnlyForGpusThePlanLacks) {
  const NvccRule rule{.nvcc = "nvcc", .gencode = {"-gencode=arch=compute_90,code=sm_90"}};
  auto call = rewrite_nvcc({"-arch=sm_100f", "-c", "b.cu"}, rule);
  EXPECT_EQ(call.error,
            "opforge: b.cu asks nvcc only for -arch=sm_100f, GPUs that [arch] list does not have (it compiles sm_90): "
            "add 10.0f to [arch] list");
  EXPECT_TRUE(call.argv.empty());
}

TEST(NvccArgs, LaunchesCompilesWithTheRealHostCompiler) {
  const NvccRule rule{.nvcc = "/cuda/bin/nvcc", .launcher = "sccache", .ccbin = "/usr/bin/g++", .host_dir = "/c/host"};
  EXPECT_EQ(rewrite_nvcc({"-ccbin", "/c/host/g++", "-c", "a.cu"}, rule).argv,
            (V{"sccache", "/cuda/bin/nvcc", "-c", "a.cu", "-ccbin", "/usr/bin/g++"}));
  EXPECT_EQ(rewrite_nvcc({"-ccbin=/opt/gcc", "-c", "a.cu"}, rule).argv,
            (V{"sccache", "/cuda/bin/nvcc", "-ccbin=/opt/gcc", "-c", "a.cu"}));
  EXPECT_EQ(rewrite_nvcc({"--version"}, rule).argv, (V{"/cuda/bin/nvcc", "--version", "-ccbin", "/usr/bin/g++"}));
}

TEST(NvccArgs, TheRuleRoundTripsAndABadOneIsRefused) {
  const NvccRule rule{.nvcc = "/cuda/bin/nvcc",
                      .gencode = {"-gencode=arch=compute_90,code=sm_90"},
                      .random_seed = true,
                      .stable_names = false,
                      .launcher = "sccache",
                      .ccbin = "/usr/bin/g++",
                      .host_dir = "/c/host",
                      .rewrites = {{"/venv/torch", "/t/torch"}, {"/cuda/lib64", "/rt/lib", false}}};
  auto back = compile::parse_rule_json(compile::rule_json(rule), "rule.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(compile::rule_json(*back), compile::rule_json(rule));
  for (const char* bad : {"", "[]", "{\"nvcc\": 3}", "{\"gencode\": []}", "{\"nvcc\": \"\"}"}) {
    auto r = compile::parse_rule_json(bad, "rule.json");
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
    EXPECT_NE(r.error().message.find("rule.json"), std::string::npos);
  }
}

TEST(NvccArgs, OpforgeNvccSaysWhatIsWrongWithItsRule) {
  const fs::path top = fs::temp_directory_path() / ("opforge-nvccrule-" + std::to_string(::getpid()));
  fs::remove_all(top);
  fs::create_directories(top);
  std::ofstream(top / "rule.json") << "{not json";
  auto m = probe::real_machine();
  auto r = m.proc.run({.argv = {OPFORGE_BINARY, "__nvcc", (top / "rule.json").string(), "--version"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_NE(r->err.find((top / "rule.json").string()), std::string::npos) << r->err;
  r = m.proc.run({.argv = {OPFORGE_BINARY, "__nvcc", (top / "missing.json").string()}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_NE(r->err.find("cannot be read"), std::string::npos) << r->err;
  fs::remove_all(top);
}

TEST(HostArgs, ACompileGetsTheLauncherTheCollectorAndG0LastALinkNothing) {
  const compile::HostRule rule{.compiler = "/usr/bin/g++",
                               .gc_param = "--param=ggc-min-heapsize=1048576",
                               .launcher = "sccache",
                               .rewrites = {{"/venv/torch", "/t/torch"}}};
  auto c = compile::rewrite_host({"-I/venv/torch/include", "-g", "-c", "a.cpp", "-o", "a.o"}, rule);
  EXPECT_TRUE(c.compile);
  EXPECT_EQ(c.argv, (V{"sccache", "/usr/bin/g++", "-I/t/torch/include", "-g", "-c", "a.cpp", "-o", "a.o",
                       "--param=ggc-min-heapsize=1048576", "-g0"}));
  auto l = compile::rewrite_host({"-shared", "a.o", "-L/venv/torch/lib", "-o", "x.so"}, rule);
  EXPECT_FALSE(l.compile);
  EXPECT_EQ(l.argv, (V{"/usr/bin/g++", "-shared", "a.o", "-L/t/torch/lib", "-o", "x.so"}));
  auto back = compile::parse_host_rule_json(compile::host_rule_json(rule), "g++.rule.json");
  ASSERT_TRUE(back);
  EXPECT_EQ(compile::host_rule_json(*back), compile::host_rule_json(rule));
  EXPECT_FALSE(compile::parse_host_rule_json("{\"gc_param\": \"\"}", "g++.rule.json"));
}

TEST(HostArgs, OpforgeHostSaysWhatIsWrongWithItsRule) {
  auto m = probe::real_machine();
  auto r = m.proc.run({.argv = {OPFORGE_BINARY, "__host", "/nonexistent/g++.rule.json", "-c", "a.cpp"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_NE(r->err.find("the host compiler wrapper's rule /nonexistent/g++.rule.json cannot be read"),
            std::string::npos)
      << r->err;
}

}  // namespace
}  // namespace opforge

TEST(NvccArgs, OneHostCompilerTheCommandsOwnWins) {
  using opforge::compile::prepend_flags_for;
  // torch's cpp_extension adds -ccbin $CC; opforge's NVCC_PREPEND_FLAGS names the same compiler.
  EXPECT_EQ(
      prepend_flags_for("-ccbin /b/shim -allow-unsupported-compiler", {"nvcc", "-ccbin", "/b/shim/gcc", "-c", "a.cu"}),
      std::optional<std::string>("-allow-unsupported-compiler"));
  EXPECT_EQ(prepend_flags_for("--compiler-bindir=/b/shim", {"nvcc", "--compiler-bindir=/x", "-c", "a.cu"}),
            std::optional<std::string>(""));
  EXPECT_EQ(prepend_flags_for("-ccbin=/b/shim -Xfatbin=-compress-all", {"nvcc", "-ccbin=/x"}),
            std::optional<std::string>("-Xfatbin=-compress-all"));
  // Nothing of its own, or nothing to drop: the environment stays as it is.
  EXPECT_EQ(prepend_flags_for("-ccbin /b/shim", {"nvcc", "-c", "a.cu"}), std::nullopt);
  EXPECT_EQ(prepend_flags_for("-Xfatbin=-compress-all", {"nvcc", "-ccbin", "/x", "-c", "a.cu"}), std::nullopt);
}
