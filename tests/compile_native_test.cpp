// The native backend on a hand-made plan and a fake machine: the exact commands and build.ninja
// text, what a failing step reports, the ccache launcher and its per-build statistics (parsed from
// ccache stats logs captured in tests/e2e/cache_two_nodes.sh).
#include <gtest/gtest.h>

#include "compile/compiler_cache/compiler_cache.h"
#include "compile/native/native.h"
#include "probe/fake_machine.h"
#include "test_util.h"

namespace opforge::compile {
namespace {

using test_util::data;

/// One CPU op and one CUDA op under /src, built into "/b d" (a space: escaping), CUDA 13.0, 8.0;9.0+PTX.
plan::Plan two_op_plan() {
  plan::Plan p;
  p.source.root = "/src";
  p.build_dir = "/b d";
  p.jobs = 2;
  cuda::Toolkit tk;
  tk.root = "/usr/local/cuda-13.0";
  tk.nvcc = "/usr/local/cuda-13.0/bin/nvcc";
  tk.include_dir = "/usr/local/cuda-13.0/include";
  tk.lib_dir = "/usr/local/cuda-13.0/lib64";
  tk.version = Version{13, 0, 0};
  p.cuda.chosen = tk;
  compiler::HostChoice h;
  h.compiler.cc = "/usr/bin/gcc-12";
  h.compiler.cxx = "/usr/bin/g++-12";
  p.host = h;
  p.arch.arches = {target::Arch{8, 0, 0, false}, target::Arch{9, 0, 0, true}};
  ops::Decision cpu;
  cpu.status = ops::OpStatus::build;
  cpu.manifest.name = "cpuop";
  cpu.manifest.dir = "/src/ops/cpuop";
  cpu.manifest.sources = {"a.cpp"};
  cpu.manifest.libraries = {"aio"};
  ops::Decision gpu;
  gpu.status = ops::OpStatus::build;
  gpu.manifest.name = "vec";
  gpu.manifest.kind = ops::Kind::cuda;
  gpu.manifest.dir = "/src/ops/vec";
  gpu.manifest.sources = {"k.cu"};
  gpu.manifest.include_dirs = {"."};
  ops::Decision skipped = cpu;
  skipped.status = ops::OpStatus::skipped;
  skipped.manifest.name = "zzz";
  p.ops = {cpu, gpu, skipped};
  return p;
}

TEST(CompileDescribe, ExactCommandsWithTheReproducibilityFlags) {
  auto g = describe(two_op_plan());
  ASSERT_TRUE(g) << g.error().render();
  ASSERT_EQ(g->steps.size(), 6u);  // per built op: compile, link, strip
  ASSERT_EQ(g->outputs.size(), 2u);
  using V = std::vector<std::string>;
  EXPECT_EQ(g->steps[0].argv,
            (V{"/usr/bin/g++-12", "-std=c++17", "-O2", "-g0", "-fPIC", "-fvisibility=hidden",
               "-frandom-seed=cpuop/a.cpp", "-ffile-prefix-map=/src=.", "-ffile-prefix-map=/b d=build", "-MD", "-MF",
               "/b d/obj/cpuop/a.cpp.o.d", "-c", "/src/ops/cpuop/a.cpp", "-o", "/b d/obj/cpuop/a.cpp.o"}));
  EXPECT_EQ(g->steps[1].argv, (V{"/usr/bin/g++-12", "-shared", "-o", "/b d/obj/cpuop/libopforge_cpuop.so.unstripped",
                                 "/b d/obj/cpuop/a.cpp.o", "-Wl,--build-id=none", "-Wl,-soname,libopforge_cpuop.so",
                                 "-Wl,-z,noexecstack", "-laio"}));
  EXPECT_EQ(g->steps[2].argv, (V{"strip", "--strip-unneeded", "-o", "/b d/lib/libopforge_cpuop.so",
                                 "/b d/obj/cpuop/libopforge_cpuop.so.unstripped"}));
  EXPECT_EQ(g->steps[3].argv, (V{"/usr/local/cuda-13.0/bin/nvcc",
                                 "-ccbin",
                                 "/usr/bin/g++-12",
                                 "-std=c++17",
                                 "-O3",
                                 "-cudart=static",
                                 "-Xcompiler=-fPIC",
                                 "-Xcompiler=-fvisibility=hidden",
                                 "-frandom-seed=vec/k.cu",
                                 "--compress-mode=default",
                                 "-Xcicc=--orig_src_path_name=vec/k.cu",
                                 "-Xcudafe=--orig_src_path_name=vec/k.cu",
                                 "--threads=2",
                                 "-Xcompiler=-ffile-prefix-map=/src=.",
                                 "-Xcompiler=-ffile-prefix-map=/b d=build",
                                 "-gencode=arch=compute_80,code=sm_80",
                                 "-gencode=arch=compute_90,code=sm_90",
                                 "-gencode=arch=compute_90,code=compute_90",
                                 "-I/src/ops/vec",
                                 "-MD",
                                 "-MF",
                                 "/b d/obj/vec/k.cu.o.d",
                                 "-c",
                                 "/src/ops/vec/k.cu",
                                 "-o",
                                 "/b d/obj/vec/k.cu.o"}));
  EXPECT_EQ(g->steps[4].argv.back(), "-lpthread");  // static cudart needs dl, rt, pthread
  EXPECT_EQ(g->outputs[1].library, "/b d/lib/libopforge_vec.so");
}

TEST(CompileDescribe, PythonExtensionStepsWithTheStableAbiAndThePlansHeaders) {
  auto p = two_op_plan();
  ops::PythonExtension ext;
  ext.name = "_hooks";
  ext.sources = {"h.c"};
  p.ops[0].manifest.python_extension = ext;
  auto none = describe(p);  // no Python headers found: no extension
  ASSERT_TRUE(none) << none.error().render();
  EXPECT_EQ(none->steps.size(), 6u);
  EXPECT_TRUE(none->outputs[0].extension.empty());
  p.python_include = "/usr/include/python3.11";
  auto g = describe(p);
  ASSERT_TRUE(g) << g.error().render();
  ASSERT_EQ(g->steps.size(), 9u);  // cpuop's 3, its extension's compile, link and strip, then vec's 3
  using V = std::vector<std::string>;
  EXPECT_EQ(g->steps[3].argv,
            (V{"/usr/bin/gcc-12", "-O2", "-g0", "-fPIC", "-fvisibility=hidden", "-frandom-seed=cpuop/h.c",
               "-ffile-prefix-map=/src=.", "-ffile-prefix-map=/b d=build", "-DPy_LIMITED_API=0x03080000",
               "-I/usr/include/python3.11", "-MD", "-MF", "/b d/obj/cpuop/_hooks/h.c.o.d", "-c", "/src/ops/cpuop/h.c",
               "-o", "/b d/obj/cpuop/_hooks/h.c.o"}));
  EXPECT_EQ(g->steps[4].argv, (V{"/usr/bin/g++-12", "-shared", "-o", "/b d/obj/cpuop/_hooks/_hooks.abi3.so.unstripped",
                                 "/b d/obj/cpuop/_hooks/h.c.o", "-Wl,--build-id=none", "-Wl,-z,noexecstack"}));
  EXPECT_EQ(g->steps[5].output, "/b d/lib/_hooks.abi3.so");
  EXPECT_EQ(g->outputs[0].extension, "/b d/lib/_hooks.abi3.so");
  EXPECT_NE(render_ninja(*g, p.build_dir).find("default /b$ d/lib/libopforge_cpuop.so /b$ d/lib/_hooks.abi3.so "),
            std::string::npos);
}

TEST(CompileDescribe, RecordedFlagsAreTheFirstCompilesFlagsWithoutCompilerOrFiles) {
  auto p = two_op_plan();
  p.ops[0].manifest.sources = {"a.cpp", "b.cpp"};
  p.ops[0].manifest.source_flags = {{"a.cpp", {"-mavx2"}}, {"b.cpp", {"-mavx512f"}}};
  p.ops[0].manifest.cxx_flags = {"-DX=1"};
  auto g = describe(p);
  ASSERT_TRUE(g) << g.error().render();
  using V = std::vector<std::string>;
  EXPECT_EQ(g->outputs[0].flags,
            (V{"-std=c++17", "-O2", "-g0", "-fPIC", "-fvisibility=hidden", "-frandom-seed=cpuop/a.cpp",
               "-ffile-prefix-map=/src=.", "-ffile-prefix-map=/b d=build", "-DX=1", "-mavx2"}));
  EXPECT_EQ(g->outputs[1].flags,
            (V{"-ccbin", "/usr/bin/g++-12", "-std=c++17", "-O3", "-cudart=static", "-Xcompiler=-fPIC",
               "-Xcompiler=-fvisibility=hidden", "-frandom-seed=vec/k.cu", "--compress-mode=default",
               "-Xcicc=--orig_src_path_name=vec/k.cu", "-Xcudafe=--orig_src_path_name=vec/k.cu", "--threads=2",
               "-Xcompiler=-ffile-prefix-map=/src=.", "-Xcompiler=-ffile-prefix-map=/b d=build",
               "-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90",
               "-gencode=arch=compute_90,code=compute_90", "-I/src/ops/vec"}));
  for (const auto& step : g->steps)
    if (step.rule == "cxx" || step.rule == "nvcc") {
      ASSERT_EQ(step.flags_end + 7, step.argv.size()) << step.description;
      EXPECT_EQ(step.argv[step.flags_end], "-MD");
    }
}

// nvcc 11.8 and 12.4 refuse -frandom-seed and --compress-mode (`nvcc fatal : Unknown option`):
// the seed goes to the host compiler instead, and the stable source name does the rest.
TEST(CompileDescribe, OlderNvccGetsOnlyTheFlagsItAccepts) {
  for (auto v : {Version{11, 8, 0}, Version{12, 4, 0}}) {
    auto p = two_op_plan();
    p.cuda.chosen->version = v;
    auto g = describe(p);
    ASSERT_TRUE(g) << g.error().render();
    const auto& argv = g->steps[3].argv;
    auto has = [&](const std::string& f) { return std::find(argv.begin(), argv.end(), f) != argv.end(); };
    EXPECT_FALSE(has("-frandom-seed=vec/k.cu")) << v.str();
    EXPECT_FALSE(has("--compress-mode=default")) << v.str();
    EXPECT_TRUE(has("-Xcompiler=-frandom-seed=vec/k.cu")) << v.str();
    EXPECT_TRUE(has("-Xcicc=--orig_src_path_name=vec/k.cu")) << v.str();
    EXPECT_TRUE(has("-Xcudafe=--orig_src_path_name=vec/k.cu")) << v.str();
    EXPECT_TRUE(has("--threads=2")) << v.str();
  }
}

TEST(CompileDescribe, OneNvccThreadWithOneJob) {
  auto p = two_op_plan();
  p.jobs = 1;
  auto g = describe(p);
  ASSERT_TRUE(g);
  EXPECT_NE(std::find(g->steps[3].argv.begin(), g->steps[3].argv.end(), "--threads=1"), g->steps[3].argv.end());
}

TEST(CompileDescribe, NvccThreadsUseOnlyTheJobsTheCudaUnitsLeaveIdleAndCountInAPool) {
  EXPECT_EQ(nvcc_threads_for(1, 4, 8), 1u);   // one architecture: nothing to split
  EXPECT_EQ(nvcc_threads_for(3, 0, 8), 1u);   // no CUDA unit
  EXPECT_EQ(nvcc_threads_for(3, 1, 2), 2u);   // one .cu, two jobs: both for its architectures
  EXPECT_EQ(nvcc_threads_for(3, 1, 8), 3u);   // at most one thread per architecture
  EXPECT_EQ(nvcc_threads_for(3, 4, 8), 2u);   // four .cu at once leave two jobs each
  EXPECT_EQ(nvcc_threads_for(3, 16, 8), 1u);  // the units alone fill the jobs
  EXPECT_EQ(nvcc_threads_for(3, 1, 0), 1u);
  auto p = two_op_plan();  // one .cu for three gencodes (8.0, 9.0, 9.0 PTX: two architectures), two jobs
  auto g = describe(p);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->nvcc_threads, 2u);
  EXPECT_EQ(g->nvcc_pool_depth, 1u);  // one nvcc of two threads at a time: two jobs
  const auto ninja = render_ninja(*g, p.build_dir);
  EXPECT_NE(ninja.find("pool nvcc\n  depth = 1\n"), std::string::npos) << ninja;
  EXPECT_NE(
      ninja.find("rule nvcc\n  command = $cmd\n  depfile = $dep\n  deps = gcc\n  description = $desc\n  pool = nvcc\n"),
      std::string::npos)
      << ninja;
  p.jobs = 1;
  g = describe(p);
  ASSERT_TRUE(g);
  EXPECT_EQ(render_ninja(*g, p.build_dir).find("pool"), std::string::npos);
}

TEST(CompileDescribe, ErrorsNameTheOp) {
  auto p = two_op_plan();
  p.ops[0].manifest.sources = {"a.f90"};
  auto g = describe(p);
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().message, "op 'cpuop': cannot compile a.f90");
  EXPECT_EQ(g.error().kind, ErrorKind::bad_input);
  p = two_op_plan();
  p.cuda.chosen.reset();
  g = describe(p);
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().message, "op 'vec' needs a CUDA toolkit, and none was resolved");
}

TEST(CompileRenderNinja, EscapesPathsAndKeepsCommandsVerbatim) {
  auto plan = two_op_plan();
  plan.jobs = 1;  // one nvcc thread: no pool (NvccThreadsUse… covers the pool)
  auto g = describe(plan);
  ASSERT_TRUE(g);
  const std::string text = render_ninja(*g, "/b d");
  EXPECT_TRUE(
      text.starts_with("# Written by opforge: do not edit.\nninja_required_version = 1.10\n"
                       "builddir = /b$ d\n\n"
                       "rule cc\n  command = $cmd\n  depfile = $dep\n  deps = gcc\n  description = $desc\n\n"
                       "rule cxx\n  command = $cmd\n  depfile = $dep\n  deps = gcc\n  description = $desc\n\n"
                       "rule nvcc\n  command = $cmd\n  depfile = $dep\n  deps = gcc\n  description = $desc\n\n"
                       "rule link\n  command = $cmd\n  description = $desc\n\n"
                       "rule strip\n  command = $cmd\n  description = $desc\n\n"
                       "build /b$ d/obj/cpuop/a.cpp.o: cxx /src/ops/cpuop/a.cpp\n"))
      << text;
  EXPECT_EQ(text, render_ninja(*describe(plan), "/b d")) << "the same plan renders the same bytes";
  EXPECT_NE(text.find("build /b$ d/obj/cpuop/a.cpp.o: cxx /src/ops/cpuop/a.cpp\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  dep = /b$ d/obj/cpuop/a.cpp.o.d\n"), std::string::npos);
  EXPECT_NE(text.find("  desc = c++ cpuop/a.cpp\n"), std::string::npos);
  EXPECT_NE(text.find("'-ffile-prefix-map=/b d=build'"), std::string::npos) << "shell-quoted in cmd";
  EXPECT_TRUE(text.ends_with("\ndefault /b$ d/lib/libopforge_cpuop.so /b$ d/lib/libopforge_vec.so\n"));
}

TEST(CompileRun, AFailingStepIsReportedWithItsCommandAndOutput) {
  probe::FakeMachine fm;
  fm.env.set("PATH", "/usr/bin");
  const std::string out =
      "[1/6] c++ cpuop/a.cpp\n[2/6] nvcc vec/k.cu\nFAILED: /b d/obj/vec/k.cu.o\n/usr/local/cuda-13.0/bin/nvcc ...\n"
      "/src/ops/vec/k.cu(3): error: identifier \"x\" is undefined\nninja: build stopped: subcommand failed.\n";
  fm.proc.on({"ninja"}, probe::ProcessResult{.exit_code = 1, .out = out});
  auto plan = two_op_plan();
  for (auto& d : plan.ops) d.required = true;  // requested explicitly: a failure fails the build
  auto r = run(fm.machine(), plan, RunOptions{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::failed);
  EXPECT_TRUE(r.error().message.starts_with("a build step failed:\nFAILED: /b d/obj/vec/k.cu.o\n"))
      << r.error().message;
  EXPECT_NE(r.error().message.find("identifier \"x\" is undefined"), std::string::npos);
  EXPECT_TRUE(fm.fs.read_file("/b d/build.ninja")) << "build.ninja is written before ninja runs";
  ASSERT_EQ(fm.proc.calls().size(), 1u);
  EXPECT_EQ(fm.proc.calls()[0].argv, (std::vector<std::string>{"ninja", "-C", "/b d", "-j", "2"}));
}

TEST(CompileRun, AnAutoOpThatFailsIsLeftOutAndTheOthersAreBuilt) {
  probe::FakeMachine fm;
  fm.env.set("PATH", "/usr/bin");
  // ninja 1.12's FAILED line, with -k 0 the other op's steps still ran.
  const std::string out =
      "[1/6] c++ cpuop/a.cpp\n[2/6] nvcc vec/k.cu\nFAILED: [code=2] /b d/obj/vec/k.cu.o\n"
      "/usr/local/cuda-13.0/bin/nvcc ...\n/src/ops/vec/k.cu(3): error: identifier \"x\" is undefined\n"
      "1 error detected in the compilation of \"/src/ops/vec/k.cu\".\n[3/6] link libopforge_cpuop.so\n"
      "[4/6] strip libopforge_cpuop.so\nninja: build stopped: cannot make progress due to previous errors.\n";
  fm.proc.on({"ninja"}, probe::ProcessResult{.exit_code = 1, .out = out});
  auto r = run(fm.machine(), two_op_plan(), RunOptions{});
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(fm.proc.calls()[0].argv, (std::vector<std::string>{"ninja", "-C", "/b d", "-j", "2", "-k", "0"}));
  ASSERT_EQ(r->outputs.size(), 1u);
  EXPECT_EQ(r->outputs[0].op, "cpuop");
  EXPECT_EQ(r->failed,
            (std::map<std::string, std::string>{{"vec", "ops/vec/k.cu:3: error: identifier \"x\" is undefined"}}));

  // The same failure of an op requested explicitly fails the build.
  auto plan = two_op_plan();
  plan.ops[1].required = true;
  auto required = run(fm.machine(), plan, RunOptions{});
  ASSERT_FALSE(required);
  EXPECT_EQ(required.error().kind, ErrorKind::failed);
  EXPECT_NE(required.error().message.find("identifier \"x\" is undefined"), std::string::npos);
}

TEST(CompileRun, CcacheLauncherWrapsCompilesOnlyAndCountsThisBuild) {
  probe::FakeMachine fm;
  fm.env.set("PATH", "/usr/bin");
  fm.fs.add_file("/b d/ccache-stats.log", data("ccache/stats-log.node-b-remote.txt"));
  fm.proc.on({"ninja"}, probe::ProcessResult{.exit_code = 0, .out = "[1/6] c++ cpuop/a.cpp\n"});
  fm.proc.on({"ccache", "--version"}, probe::ProcessResult{.exit_code = 0, .out = data("ccache/version-4.7.5.txt")});
  auto p = two_op_plan();
  p.recipe.build.cache = recipe::Cache::none;  // the plan's cache (--cache ccache) decides
  p.cache = recipe::Cache::ccache;
  auto r = run(fm.machine(), p, {});
  ASSERT_TRUE(r) << r.error().render();
  const auto& env = *fm.proc.calls().at(0).env;
  EXPECT_EQ(env.at("CCACHE_STATSLOG"), "/b d/ccache-stats.log");
  EXPECT_EQ(env.at("CCACHE_BASEDIR"), "/");
  EXPECT_EQ(env.at("CCACHE_NOHASHDIR"), "1");
  const std::string ninja = *fm.fs.read_file("/b d/build.ninja");
  EXPECT_NE(ninja.find("cmd = ccache /usr/bin/g++-12 -std=c++17"), std::string::npos);
  EXPECT_NE(ninja.find("cmd = ccache /usr/local/cuda-13.0/bin/nvcc"), std::string::npos);
  EXPECT_EQ(ninja.find("cmd = ccache strip"), std::string::npos);
  EXPECT_EQ(ninja.find("cmd = ccache /usr/bin/g++-12 -shared"), std::string::npos);
  // The log in the folder was left by an earlier build: it is removed before ninja runs, and this
  // fake ninja wrote none, so this build counted nothing.
  ASSERT_TRUE(r->cache);
  EXPECT_EQ(r->cache->calls, 0);
}

TEST(CompileRun, PlanCacheNoneRunsNoCcacheWhateverTheRecipeSays) {
  probe::FakeMachine fm;
  fm.env.set("PATH", "/usr/bin");
  fm.proc.on({"ninja"}, probe::ProcessResult{.exit_code = 0, .out = "[1/6] c++ cpuop/a.cpp\n"});
  auto p = two_op_plan();
  p.recipe.build.cache = recipe::Cache::ccache;  // --cache none beat it in plan::make
  p.cache = recipe::Cache::none;
  auto r = run(fm.machine(), p, {});
  ASSERT_TRUE(r) << r.error().render();
  for (const auto& [k, v] : *fm.proc.calls().at(0).env) EXPECT_FALSE(k.starts_with("CCACHE_")) << k << "=" << v;
  EXPECT_EQ(fm.fs.read_file("/b d/build.ninja")->find("ccache"), std::string::npos);
  EXPECT_FALSE(r->cache);
}

TEST(CompileRun, AnOlderCcachesCountersAreNotRead) {
  // Before 4.6 the counters have other names (secondary storage): they are not guessed at.
  probe::FakeMachine fm;
  fm.env.set("PATH", "/usr/bin");
  fm.fs.add_file("/b d/ccache-stats.log", data("ccache/stats-log.node-b-remote.txt"));
  fm.proc.on({"ninja"}, probe::ProcessResult{.exit_code = 0, .out = "[1/6] c++ cpuop/a.cpp\n"});
  fm.proc.on({"ccache", "--version"}, probe::ProcessResult{.exit_code = 0, .out = "ccache version 4.5.1\n"});
  auto p = two_op_plan();
  p.cache = recipe::Cache::ccache;
  auto r = run(fm.machine(), p, {});
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(fm.proc.calls().back().argv, (std::vector<std::string>{"ccache", "--version"}));
  EXPECT_FALSE(r->cache);
}

TEST(CompileCcacheStats, VersionFromCapturedOutput) {
  EXPECT_EQ(parse_ccache_version(data("ccache/version-4.7.5.txt")), (Version{4, 7, 5}));
  EXPECT_EQ(parse_ccache_version("ccache version 4.10\n"), (Version{4, 10, 0}));
  EXPECT_EQ(parse_ccache_version("sccache 0.8.1\n"), std::nullopt);
  EXPECT_EQ(parse_ccache_version(""), std::nullopt);
  EXPECT_TRUE(reads_stats_log(Version{4, 6, 0}));
  EXPECT_TRUE(reads_stats_log(Version{4, 7, 5}));
  EXPECT_FALSE(reads_stats_log(Version{4, 5, 1}));
}

TEST(CompileCcacheStats, CapturedLogs) {
  CacheStats a = parse_ccache_stats_log(data("ccache/stats-log.node-a.txt"));
  EXPECT_EQ(a.calls, 9);
  EXPECT_EQ(a.hits, 0);
  EXPECT_EQ(a.misses, 9);
  EXPECT_EQ(describe_cache_stats(a), "ccache: 0 of 9 compiles were cache hits (0%)");
  CacheStats b = parse_ccache_stats_log(data("ccache/stats-log.node-b-remote.txt"));
  EXPECT_EQ(b.calls, 9);
  EXPECT_EQ(b.hits, 9);
  EXPECT_EQ(b.remote_hits, 9);
  EXPECT_EQ(describe_cache_stats(b), "ccache: 9 of 9 compiles were cache hits (100%), 9 from remote storage");
  // A local hit and a call ccache could not cache (e.g. linking through it), as ccache 4.7 logs them.
  CacheStats c = parse_ccache_stats_log(
      "# a.c\ndirect_cache_hit\nlocal_storage_hit\n"
      "# b.c\ncalled_for_link\n");
  EXPECT_EQ(describe_cache_stats(c), "ccache: 1 of 1 compiles were cache hits (100%); 1 calls not cacheable");
  EXPECT_EQ(describe_cache_stats(parse_ccache_stats_log("")), "ccache: no compiler calls");
}

}  // namespace
}  // namespace opforge::compile
