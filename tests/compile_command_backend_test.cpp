#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compile/command/command_backend.h"
#include "compile/scratch/scratch.h"
#include "compile/wrap/environment.h"
#include "compile/wrap/toolkit_view.h"
#include "compile/wrap/wrappers.h"
#include "compiler/cpu_target.h"
#include "compiler/host.h"
#include "probe/fake_machine.h"
#include "probe/overlay_environment.h"
#include "target/arch.h"
#include "target/platform.h"
#include "test_util.h"
#include "wheel/wheel.h"

namespace fs = std::filesystem;
using namespace opforge;

namespace {

using test_util::slurp;

/// compile::nvcc_wrapper run by this build's opforge (its scripts hand each command line to
/// `opforge __nvcc`).
compile::NvccWrapper nvcc_wrapper(const fs::path& cache_dir, const fs::path& nvcc, const std::string& stamp = {},
                                  const std::vector<std::string>& gencode = {}, bool random_seed = false,
                                  const compile::CompilerLaunch& launch = {}, bool stable_names = false,
                                  const std::vector<compile::ArgRewrite>& rewrites = {}) {
  return compile::nvcc_wrapper(cache_dir, {OPFORGE_BINARY}, nvcc, stamp, gencode, random_seed, launch, stable_names,
                               rewrites);
}

/// The entries that differ between two wheels (by content, mode, or presence), sorted: what a
/// rebuild names when its bytes do not match. Empty when the entries are equal (the archives may
/// still differ in zip metadata; compare bytes for that).
Result<std::vector<std::string>> differing_entries(std::string_view wheel_a, std::string_view wheel_b) {
  auto a = OPFORGE_TRY(wheel::read_archive(wheel_a));
  auto b = OPFORGE_TRY(wheel::read_archive(wheel_b));
  std::map<std::string, const wheel::Entry*> in_b;
  for (const auto& e : b) in_b[e.path] = &e;
  std::vector<std::string> out;
  for (const auto& e : a) {
    auto it = in_b.find(e.path);
    if (it == in_b.end() || it->second->content != e.content || it->second->mode != e.mode) out.push_back(e.path);
    if (it != in_b.end()) in_b.erase(it);
  }
  for (const auto& [path, _] : in_b) out.push_back(path);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

plan::Plan base_plan(const fs::path& src, const fs::path& work) {
  plan::Plan p;
  p.source.root = src;
  p.build_dir = work / "build";
  p.dist_dir = work / "dist";
  p.jobs = 2;
  p.source_date_epoch = 1700000000;
  p.recipe.build.backend = recipe::Backend::command;
  return p;
}

}  // namespace

TEST(CompileCommandBackend, EnvironmentCarriesPlanCompilerAndReproducibilityFlags) {
  auto p = base_plan("/src/ops", "/w");
  p.exports = {{"TORCH_CUDA_ARCH_LIST", "8.0;9.0+PTX"},
               {"DS_BUILD_OPS", "0"},
               {"DS_BUILD_AIO", "1"},
               {"CUDA_HOME", "/usr/local/cuda-12.4"},
               {"PATH", "/usr/local/cuda-12.4/bin:/usr/bin"}};
  compiler::HostChoice host;
  host.compiler.cc = "/usr/bin/gcc-11";
  host.compiler.cxx = "/usr/bin/g++-11";
  host.shim_dir = "/w/shim";
  p.host = host;
  auto env = compile::command_environment({{"PATH", "/bin"}, {"CFLAGS", "-O3"}, {"HOME", "/h"}}, p);
  EXPECT_EQ(env["PATH"], "/usr/local/cuda-12.4/bin:/usr/bin");
  EXPECT_EQ(env["HOME"], "/h");
  EXPECT_EQ(env["TORCH_CUDA_ARCH_LIST"], "8.0;9.0+PTX");
  EXPECT_EQ(env["DS_BUILD_AIO"], "1");
  // The shim holds gcc/g++/cc/c++ links (compiler::invocation): the names nvcc looks for.
  EXPECT_EQ(env["CC"], "/w/shim/gcc");
  EXPECT_EQ(env["CXX"], "/w/shim/g++");
  EXPECT_EQ(env["NVCC_PREPEND_FLAGS"], "-ccbin /w/shim");
  EXPECT_EQ(env["NVCC_APPEND_FLAGS"], "-Xcompiler=-ffile-prefix-map=/src/ops=. -Xcompiler=-frandom-seed=opforge");
  EXPECT_EQ(env["CFLAGS"], "-O3 -ffile-prefix-map=/src/ops=. -frandom-seed=opforge");
  EXPECT_EQ(env["CXXFLAGS"], "-ffile-prefix-map=/src/ops=. -frandom-seed=opforge");
  EXPECT_EQ(env["LDFLAGS"], "-Wl,--build-id=none");
  EXPECT_EQ(env["SOURCE_DATE_EPOCH"], "1700000000");
  EXPECT_EQ(env["MAX_JOBS"], "2");
  EXPECT_EQ(env["PYTHONHASHSEED"], "0");
  EXPECT_EQ(env["TORCH_NO_COMPILER_WRAPPER"], "1");  // no compiler cache asked for: every file compiles
  // `plan` of a git source not fetched yet: the build reads the commit's time, the plan shows where.
  p.epoch_at_fetch = true;
  EXPECT_EQ(compile::command_exports({{"PATH", "/bin"}}, p).at("SOURCE_DATE_EPOCH"), "<commit time>");
}

TEST(CompileCommandBackend, FlagsAreAddedToPythonsOwnCflagsAndCcacheIsTorchs) {
  auto p = base_plan("/src/ops", "/w");
  cuda::TorchInfo torch;
  torch.python = "python3";
  torch.python_cflags = "-DNDEBUG -g -fwrapv -O2 -Wall ";
  p.cuda.torch = torch;
  p.cache = recipe::Cache::ccache;
  p.recipe.build.remote = "redis://127.0.0.1:6379";
  auto env = compile::command_environment({{"CFLAGS", "-I/opt/aio/include"}}, p, "/cache/trees/0123");
  // setuptools would take CFLAGS instead of sysconfig's: Python's own come first, then the caller's.
  EXPECT_EQ(
      env["CFLAGS"],
      "-DNDEBUG -g -fwrapv -O2 -Wall -I/opt/aio/include -ffile-prefix-map=/cache/trees/0123=. -frandom-seed=opforge");
  EXPECT_EQ(env["CXXFLAGS"],
            "-DNDEBUG -g -fwrapv -O2 -Wall -ffile-prefix-map=/cache/trees/0123=. -frandom-seed=opforge");
  EXPECT_FALSE(env.contains("TORCH_NO_COMPILER_WRAPPER"));
  EXPECT_EQ(env["CCACHE_BASEDIR"], "/cache/trees/0123");
  EXPECT_EQ(env["CCACHE_REMOTE_STORAGE"], "redis://127.0.0.1:6379");
  EXPECT_EQ(env["CCACHE_DEPEND"], "1");  // a miss runs the compiler only, not the preprocessor first
  // `opforge env` prints exactly what differs from the caller's environment.
  auto delta = compile::command_exports({{"CFLAGS", "-I/opt/aio/include"}, {"HOME", "/h"}}, p, "/t");
  EXPECT_FALSE(delta.contains("HOME"));
  EXPECT_TRUE(delta.contains("CFLAGS"));
  EXPECT_EQ(delta["SOURCE_DATE_EPOCH"], "1700000000");
}

TEST(CompileCommandBackend, ThePlansCacheDecidesNotTheRecipes) {
  for (auto [recipe_cache, plan_cache] :
       {std::pair{recipe::Cache::ccache, recipe::Cache::none}, std::pair{recipe::Cache::none, recipe::Cache::ccache}}) {
    auto p = base_plan("/src/ops", "/w");
    p.recipe.build.cache = recipe_cache;
    p.cache = plan_cache;
    cuda::Toolkit tk;
    tk.root = "/usr/local/cuda";
    tk.nvcc = "/usr/local/cuda/bin/nvcc";
    p.cuda.chosen = tk;
    auto env = compile::command_environment({{"PATH", "/bin"}, {"TORCH_NO_COMPILER_WRAPPER", "0"}}, p, "/t",
                                            "/c/nvcc/0123/nvcc");
    if (plan_cache == recipe::Cache::ccache) {
      EXPECT_FALSE(env.contains("TORCH_NO_COMPILER_WRAPPER"));
      EXPECT_EQ(env["CCACHE_BASEDIR"], "/t");
      EXPECT_EQ(env["CCACHE_DEPEND"], "1");
      EXPECT_EQ(env["PYTORCH_NVCC"], "ccache /c/nvcc/0123/nvcc");
      EXPECT_FALSE(env.contains("CCACHE_DISABLE"));
    } else {
      EXPECT_EQ(env["TORCH_NO_COMPILER_WRAPPER"], "1");
      // A project's own ccache launcher (ggml's GGML_CCACHE) compiles for real too.
      EXPECT_EQ(env["CCACHE_DISABLE"], "1");
      for (const auto& [k, v] : env) EXPECT_TRUE(!k.starts_with("CCACHE_") || k == "CCACHE_DISABLE") << k << "=" << v;
      EXPECT_EQ(env["PYTORCH_NVCC"], "/c/nvcc/0123/nvcc");
    }
  }
}

// A CMake the project runs (directly, from setup.py, through scikit-build-core) gets the plan's
// toolkit, nvcc wrapper, host compiler, arch list, jobs and compiler cache through its own variables.
TEST(CompileCommandBackend, CmakeGetsThePlansToolkitArchitecturesJobsAndCache) {
  auto p = base_plan("/src/ops", "/w");
  p.jobs = 6;
  cuda::Toolkit tk;
  tk.root = "/usr/local/cuda-12.8";
  tk.nvcc = "/usr/local/cuda-12.8/bin/nvcc";
  p.cuda.chosen = tk;
  p.arch.arches = target::parse_arch_list("8.0;8.6;9.0+PTX").value();
  compiler::HostChoice host;
  host.compiler.cc = "/usr/bin/gcc-12";
  host.compiler.cxx = "/usr/bin/g++-12";
  host.shim_dir = "/w/shim";
  p.host = host;
  auto env = compile::command_environment({{"PATH", "/bin"}, {"CMAKE_ARGS", "-DFOO=ON -GNinja"}}, p, "/t",
                                          "/c/nvcc/0123/nvcc");
  EXPECT_EQ(env["CUDACXX"], "/c/nvcc/0123/nvcc");  // the wrapper: the plan's arch rewrite applies
  EXPECT_EQ(env["CUDAToolkit_ROOT"], "/usr/local/cuda-12.8");
  EXPECT_EQ(env["CUDAHOSTCXX"], "/w/shim/g++");
  EXPECT_EQ(env["CUDAARCHS"], "80-real;86-real;90-real;90-virtual");
  // Build-tree RPATHs relative to $ORIGIN first, the caller's arguments after them, the plan's list
  // last (a later -D wins).
  EXPECT_EQ(env["CMAKE_ARGS"],
            "-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DFOO=ON -GNinja "
            "-DCMAKE_CUDA_ARCHITECTURES=80-real;86-real;90-real;90-virtual");
  EXPECT_EQ(env["CMAKE_BUILD_PARALLEL_LEVEL"], "6");
  EXPECT_FALSE(env.contains("SKBUILD_CMAKE_DEFINE"));          // scikit-build-core splits it on every ';'
  EXPECT_FALSE(env.contains("CMAKE_CUDA_COMPILER_LAUNCHER"));  // no compiler cache
  EXPECT_EQ(env["SKBUILD_BUILD_DIR"], "/t/build/skbuild");     // not a new temporary folder each time

  // The project's own variables, each in its form; -D arguments after the plan's list.
  p.recipe.arch.env = {{"NVTE_CUDA_ARCHS", "numbers"}, {"FLASHINFER_CUDA_ARCH_LIST", "dotted"}};
  p.recipe.arch.cmake_define = {{"COMPUTE_CAPABILITY", "numbers"}};
  env = compile::command_environment({{"PATH", "/bin"}, {"SKBUILD_BUILD_DIR", "/mine"}}, p, "/t", "/c/nvcc/0123/nvcc");
  EXPECT_EQ(env["NVTE_CUDA_ARCHS"], "80;86;90");
  EXPECT_EQ(env["FLASHINFER_CUDA_ARCH_LIST"], "8.0 8.6 9.0");
  EXPECT_EQ(env["CMAKE_ARGS"],
            "-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON "
            "-DCMAKE_CUDA_ARCHITECTURES=80-real;86-real;90-real;90-virtual -DCOMPUTE_CAPABILITY=80;86;90");
  EXPECT_EQ(env["SKBUILD_BUILD_DIR"], "/mine");  // the caller's own folder stays
  // What `plan` shows: every channel, with its reader.
  std::vector<std::string> said;
  for (const auto& c : compile::arch_channels(p)) said.push_back(c.variable + "=" + c.value);
  EXPECT_EQ(said, (std::vector<std::string>{"TORCH_CUDA_ARCH_LIST=8.0;8.6;9.0+PTX",
                                            "CUDAARCHS=80-real;86-real;90-real;90-virtual",
                                            "CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=80-real;86-real;90-real;90-virtual",
                                            "FLASHINFER_CUDA_ARCH_LIST=8.0 8.6 9.0", "NVTE_CUDA_ARCHS=80;86;90",
                                            "CMAKE_ARGS=-DCOMPUTE_CAPABILITY=80;86;90"}));
  p.recipe.arch.env.clear();
  p.recipe.arch.cmake_define.clear();

  p.cache = recipe::Cache::ccache;
  p.recipe.arch.enforce = false;  // the project's own list is kept: CUDAARCHS is only a default
  p.arch.arches = target::parse_arch_list("9.0a").value();
  env = compile::command_environment({{"PATH", "/bin"}}, p, "/t");
  EXPECT_EQ(env["CUDACXX"], "/usr/local/cuda-12.8/bin/nvcc");  // no wrapper: the toolkit's own
  EXPECT_EQ(env["CUDAARCHS"], "90a-real");
  EXPECT_EQ(env["CMAKE_ARGS"], "-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON");  // no architectures
  for (const char* var : {"CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER", "CMAKE_CUDA_COMPILER_LAUNCHER"})
    EXPECT_EQ(env[var], "ccache") << var;

  // No toolkit: jobs and the RPATH setting only; `opforge plan` and `opforge env` show what differs.
  p.cuda.chosen.reset();
  p.cache = recipe::Cache::none;
  auto delta = compile::command_exports({{"PATH", "/bin"}}, p, "/t");
  EXPECT_EQ(delta["CMAKE_BUILD_PARALLEL_LEVEL"], "6");
  EXPECT_EQ(delta["CMAKE_ARGS"], "-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON");
  for (const char* var : {"CUDACXX", "CUDAToolkit_ROOT", "CUDAHOSTCXX", "CUDAARCHS"})
    EXPECT_FALSE(delta.contains(var)) << var;
}

TEST(CompileCommandBackend, TorchRequirementIsTheMajorMinorSeries) {
  EXPECT_EQ(plan::torch_pin("2.15.0+cu132"), "torch==2.15.*");
  EXPECT_EQ(plan::torch_pin("2.6.0a0+git1234"), "torch==2.6.*");
  EXPECT_EQ(plan::torch_pin("2"), "");
  EXPECT_EQ(plan::torch_pin("2.x"), "");
  EXPECT_EQ(plan::torch_pin(""), "");
}

TEST(CompileCommandBackend, NvccWrapperDropsLineinfoAndIsWrittenOnce) {
  fs::path top = fs::temp_directory_path() / ("opforge-nvccwrap-" + std::to_string(::getpid()));
  fs::remove_all(top);
  fs::create_directories(top);
  // A stand-in for the toolkit's nvcc that prints its arguments, one a line.
  const fs::path nvcc = top / "cuda bin" / "nvcc";
  fs::create_directories(nvcc.parent_path());
  std::ofstream(nvcc) << "#!/bin/sh\nfor a do echo \"$a\"; done\n";
  fs::permissions(nvcc, fs::perms::owner_all);
  auto w = nvcc_wrapper(top / "cache", nvcc);
  EXPECT_EQ(w.path.filename(), "nvcc");  // ccache knows nvcc by its name
  EXPECT_EQ(w.path.parent_path().parent_path(), top / "cache" / "nvcc");
  auto m = probe::real_machine();
  ASSERT_TRUE(compile::write_nvcc_wrapper(m.fs, w));
  const auto written = fs::last_write_time(w.path);
  ASSERT_TRUE(compile::write_nvcc_wrapper(m.fs, w));  // unchanged: ccache keys on its mtime
  EXPECT_EQ(fs::last_write_time(w.path), written);
  auto r = m.proc.run({.argv = {w.path.string(), "-O3", "-lineinfo", "--generate-line-info", "a b", "-c", "x.cu"}});
  ASSERT_TRUE(r && r->ok());
  EXPECT_EQ(r->out, "-O3\na b\n-c\nx.cu\n");

  plan::Plan p = base_plan("/src/ops", "/w");
  auto env = compile::command_environment({}, p, "/t", w.path);
  EXPECT_FALSE(env.contains("PYTORCH_NVCC"));  // no toolkit chosen: nothing to wrap
  cuda::Toolkit tk;
  tk.nvcc = nvcc;
  p.cuda.chosen = tk;
  EXPECT_EQ(compile::command_environment({}, p, "/t", w.path)["PYTORCH_NVCC"], w.path.string());
  p.cache = recipe::Cache::ccache;  // torch wraps only its own nvcc in ccache
  EXPECT_EQ(compile::command_environment({}, p, "/t", w.path)["PYTORCH_NVCC"], "ccache " + w.path.string());
  fs::remove_all(top);
}

// A cross-build of a command: the wrappers compile and link against the target's torch and CUDA
// runtime where torch's cpp_extension names this machine's, in every spelling it uses (-I, -isystem
// and its separate word, -L); a sibling folder whose name only starts the same is left alone, and
// the toolkit's library folder is rewritten exactly (not its stubs/).
TEST(CompileCommandBackend, CrossWrappersRewriteTheTorchAndRuntimeFolders) {
  fs::path top = fs::temp_directory_path() / ("opforge-crosswrap-" + std::to_string(::getpid()));
  fs::remove_all(top);
  fs::create_directories(top);
  const fs::path nvcc = top / "bin" / "nvcc";
  fs::create_directories(nvcc.parent_path());
  std::ofstream(nvcc) << "#!/bin/sh\nfor a do echo \"$a\"; done\n";
  fs::permissions(nvcc, fs::perms::owner_all);
  const std::string torch = "/venv/site-packages/torch", tt = "/cache/torch-aarch64/site/torch";
  const std::vector<compile::ArgRewrite> rw{{torch, tt}, {"/usr/local/cuda/lib64", "/cache/rt/lib", false}};
  auto w = nvcc_wrapper(top / "cache", nvcc, {}, {}, false, {}, false, rw);
  auto m = probe::real_machine();
  ASSERT_TRUE(compile::write_nvcc_wrapper(m.fs, w));
  auto r = m.proc.run({.argv = {w.path.string(), "-I" + torch + "/include", "-isystem", torch + "/include/api",
                                "-isystem" + torch + "/include", "-L" + torch + "/lib", "-I" + torch + "vision/x",
                                "-L/usr/local/cuda/lib64", "-L/usr/local/cuda/lib64/stubs", "a b", "-c", "x.cu"}});
  ASSERT_TRUE(r && r->ok());
  EXPECT_EQ(r->out, "-I" + tt + "/include\n-isystem\n" + tt + "/include/api\n-isystem" + tt + "/include\n-L" + tt +
                        "/lib\n-I" + torch +
                        "vision/x\n-L/cache/rt/lib\n-L/usr/local/cuda/lib64/stubs\na b\n-c\nx.cu\n");

  // The plan's rewrites and variables: only for a cross-built command.
  plan::Plan p = base_plan("/src/ops", "/w");
  EXPECT_TRUE(compile::cross_rewrites(p).empty());
  EXPECT_FALSE(compile::command_environment({}, p, "/t").contains("_PYTHON_SYSCONFIGDATA_NAME"));
  p.platform = target::find_platform("aarch64");
  p.cross_command = plan::Plan::CrossCommand{.sysconfig = "_sysconfigdata__linux_aarch64-linux-gnu",
                                             .sysconfig_file = {},
                                             .host_platform = "linux-aarch64",
                                             .ext_suffix = ".cpython-311-aarch64-linux-gnu.so"};
  p.python_arch_include = "/usr/include";
  p.cross_nvcc_includes = {"-I/cache/rt/include", "-isystem", "/usr/local/cuda-13.0/include/cccl"};
  cuda::TorchInfo ti;
  ti.torch_dir = torch;
  p.cuda.torch = ti;
  cuda::TargetTorch target;
  target.torch_dir = tt;
  p.target_torch = target;
  cuda::Toolkit tk;
  tk.root = "/usr/local/cuda-13.0";
  tk.lib_dir = "/usr/local/cuda-13.0/targets/x86_64-linux/lib";
  p.cuda.chosen = tk;
  cuda::TargetFiles rt;
  rt.lib_dir = "/cache/rt/lib";
  p.cuda_target = rt;
  const auto got = compile::cross_rewrites(p);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].from, torch);
  EXPECT_EQ(got[1].from, tk.lib_dir.string());
  EXPECT_EQ(got[2].from, "/usr/local/cuda-13.0/lib64");
  EXPECT_FALSE(got[2].prefix);
  auto env = compile::command_environment({}, p, "/t");
  EXPECT_EQ(env["_PYTHON_SYSCONFIGDATA_NAME"], "_sysconfigdata__linux_aarch64-linux-gnu");
  EXPECT_EQ(env["_PYTHON_HOST_PLATFORM"], "linux-aarch64");
  EXPECT_NE(env["CXXFLAGS"].find("-idirafter /usr/include"), std::string::npos);
  EXPECT_NE(env["NVCC_APPEND_FLAGS"].find("-Xcompiler=-idirafter,/usr/include"), std::string::npos);
  EXPECT_NE(env["NVCC_APPEND_FLAGS"].find("-I/cache/rt/include -isystem /usr/local/cuda-13.0/include/cccl"),
            std::string::npos);
  fs::remove_all(top);
}

// The project's architecture options, in every spelling nvcc takes, give way to the plan's, and are
// logged as asked; a command without one keeps nvcc's default.
TEST(CompileCommandBackend, NvccWrapperReplacesTheProjectsArchitectures) {
  fs::path top = fs::temp_directory_path() / ("opforge-nvccarch-" + std::to_string(::getpid()));
  fs::remove_all(top);
  fs::create_directories(top);
  const fs::path nvcc = top / "nvcc-real";
  std::ofstream(nvcc) << "#!/bin/sh\nfor a do echo \"$a\"; done\n";
  fs::permissions(nvcc, fs::perms::owner_all);
  auto m = probe::real_machine();
  const std::vector<std::string> plan_flags = {"-gencode=arch=compute_90,code=sm_90",
                                               "-gencode=arch=compute_90,code=compute_90"};
  auto w = nvcc_wrapper(top / "cache", nvcc, "", plan_flags);
  ASSERT_TRUE(compile::write_nvcc_wrapper(m.fs, w));
  const fs::path log = top / "arch.log";
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), w.path.string());
    auto r = m.proc.run({.argv = args,
                         .env = std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"},
                                                                   {"OPFORGE_NVCC_ARCH_LOG", log.string()}}});
    return r && r->ok() ? r->out : std::string("failed");
  };
  EXPECT_EQ(run({"-O3", "-gencode", "arch=compute_75,code=sm_75", "-gencode=arch=compute_80,code=sm_80",
                 "--generate-code=arch=compute_121,code=[sm_121,compute_121]", "-arch=sm_86", "-arch", "sm_87",
                 "--gpu-architecture=compute_89", "-code=sm_89", "--gpu-code", "sm_100", "-lineinfo", "-c", "a.cu"}),
            "-O3\n-c\na.cu\n-gencode=arch=compute_90,code=sm_90\n-gencode=arch=compute_90,code=compute_90\n");
  EXPECT_EQ(run({"--version"}), "--version\n");  // nothing asked: nothing added
  // CMake's spellings of CMAKE_CUDA_ARCHITECTURES "75;90a-real" (and the two-argument form).
  EXPECT_EQ(run({"--generate-code=arch=compute_75,code=[compute_75,sm_75]", "--generate-code",
                 "arch=compute_80,code=[sm_80]", "-gencode=arch=compute_86,code=[compute_86,sm_86]", "-c", "b.cu"}),
            "-c\nb.cu\n-gencode=arch=compute_90,code=sm_90\n-gencode=arch=compute_90,code=compute_90\n");
  auto logged = m.fs.read_file(log);
  ASSERT_TRUE(logged);
  EXPECT_EQ(*logged,
            " -gencode arch=compute_75,code=sm_75 -gencode=arch=compute_80,code=sm_80 "
            "--generate-code=arch=compute_121,code=[sm_121,compute_121] -arch=sm_86 -arch sm_87 "
            "--gpu-architecture=compute_89 -code=sm_89 --gpu-code sm_100\n"
            " --generate-code=arch=compute_75,code=[compute_75,sm_75] --generate-code arch=compute_80,code=[sm_80] "
            "-gencode=arch=compute_86,code=[compute_86,sm_86]\n");
  EXPECT_EQ(compile::project_arch_targets(*logged),
            (std::vector<std::string>{"sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_100", "sm_121", "compute_75",
                                      "compute_86", "compute_87", "compute_89", "compute_121"}));

  // [arch] enforce = false: the options stay where they were, and are still logged.
  auto keep = nvcc_wrapper(top / "cache", nvcc, "", {});
  ASSERT_TRUE(compile::write_nvcc_wrapper(m.fs, keep));
  EXPECT_NE(keep.path, w.path);  // another arch list, another wrapper (and ccache key)
  fs::remove(log);
  auto r = m.proc.run(
      {.argv = {keep.path.string(), "-gencode", "arch=compute_75,code=sm_75", "-arch=sm_80", "-c", "a.cu"},
       .env = std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}, {"OPFORGE_NVCC_ARCH_LOG", log.string()}}});
  ASSERT_TRUE(r && r->ok());
  EXPECT_EQ(r->out, "-gencode\narch=compute_75,code=sm_75\n-arch=sm_80\n-c\na.cu\n");
  EXPECT_EQ(compile::project_arch_targets(m.fs.read_file(log).value_or("")),
            (std::vector<std::string>{"sm_75", "sm_80", "compute_80"}));
  fs::remove_all(top);
}

// A target of one GPU's own features (sm_90a: wgmma, TMA) or family (sm_100f) whose GPU is in the
// plan is kept, in place of the plan's plain target for it: the file exists for that target only.
// A compile that asks only for GPUs the plan lacks stops before nvcc runs, naming the file.
TEST(CompileCommandBackend, NvccWrapperKeepsArchSpecificTargetsOfThePlansGpus) {
  fs::path top = fs::temp_directory_path() / ("opforge-nvcc90a-" + std::to_string(::getpid()));
  fs::remove_all(top);
  fs::create_directories(top);
  const fs::path nvcc = top / "nvcc-real";
  std::ofstream(nvcc) << "#!/bin/sh\nfor a do echo \"$a\"; done\n";
  fs::permissions(nvcc, fs::perms::owner_all);
  auto m = probe::real_machine();
  auto w = nvcc_wrapper(top / "cache", nvcc, "",
                        {"-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90"});
  ASSERT_TRUE(compile::write_nvcc_wrapper(m.fs, w));
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), w.path.string());
    auto r = m.proc.run({.argv = args, .env = std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}}});
    if (!r) return std::string("did not run");
    return r->ok() ? r->out : "exit " + std::to_string(r->exit_code) + ": " + r->err;
  };
  EXPECT_EQ(run({"-gencode", "arch=compute_90a,code=sm_90a", "-c", "hopper.cu"}),
            "-c\nhopper.cu\n-gencode=arch=compute_90a,code=sm_90a\n");
  EXPECT_EQ(run({"-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90a,code=sm_90a", "-c", "m.cu"}),
            "-c\nm.cu\n-gencode=arch=compute_90a,code=sm_90a\n-gencode=arch=compute_80,code=sm_80\n");
  EXPECT_EQ(run({"-arch=sm_90a", "-c", "a.cu"}),
            "-c\na.cu\n-gencode=arch=compute_90a,code=sm_90a\n-gencode=arch=compute_90a,code=compute_90a\n");
  EXPECT_EQ(run({"--generate-code=arch=compute_90a,code=[sm_90a,compute_90a]", "-c", "p.cu"}),
            "-c\np.cu\n-gencode=arch=compute_90a,code=sm_90a\n-gencode=arch=compute_90a,code=compute_90a\n");
  EXPECT_EQ(run({"-arch=sm_90a", "-gencode=arch=compute_90a,code=sm_90a", "-c", "d.cu"}),  // each target once
            "-c\nd.cu\n-gencode=arch=compute_90a,code=sm_90a\n-gencode=arch=compute_90a,code=compute_90a\n");
  // Plain targets still give way to the plan's (causal-conv1d's nine become 8.0 and 9.0).
  EXPECT_EQ(run({"-gencode", "arch=compute_75,code=sm_75", "-c", "c.cu"}),
            "-c\nc.cu\n-gencode=arch=compute_80,code=sm_80\n-gencode=arch=compute_90,code=sm_90\n");
  EXPECT_EQ(run({"-gencode", "arch=compute_100a,code=sm_100a", "-c", "blackwell.cu"}),
            "exit 1: opforge: blackwell.cu asks nvcc only for -gencode arch=compute_100a,code=sm_100a, GPUs that "
            "[arch] list does not have (it compiles sm_80 sm_90): add 10.0a to [arch] list\n");
  fs::remove_all(top);
}

// cache = "sccache": each compile runs through the launcher, nvcc with the real host compiler in
// place of a -ccbin into the host wrappers (the launcher would otherwise run inside its own nvcc
// steps), a project's own -ccbin kept; what does not compile runs without it.
TEST(CompileCommandBackend, NvccWrapperLaunchesEachCompile) {
  fs::path top = fs::temp_directory_path() / ("opforge-nvcclaunch-" + std::to_string(::getpid()));
  fs::remove_all(top);
  fs::create_directories(top / "bin");
  for (auto name : {"nvcc-real", "bin/launcher"}) {
    std::ofstream(top / name) << "#!/bin/sh\necho " << fs::path(name).filename().string()
                              << "\nfor a do echo \"$a\"; done\n";
    fs::permissions(top / name, fs::perms::owner_all);
  }
  auto m = probe::real_machine();
  const fs::path host_dir = top / "host wrappers";
  auto w = nvcc_wrapper(top / "cache", top / "nvcc-real", "", {"-gencode=arch=compute_90,code=sm_90"}, true,
                        {.program = "launcher", .ccbin = "/usr/bin/g++", .host_dir = host_dir});
  ASSERT_TRUE(compile::write_nvcc_wrapper(m.fs, w));
  EXPECT_NE(w.path,
            nvcc_wrapper(top / "cache", top / "nvcc-real", "", {"-gencode=arch=compute_90,code=sm_90"}, true).path);
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), w.path.string());
    auto r = m.proc.run(
        {.argv = args, .env = std::map<std::string, std::string>{{"PATH", (top / "bin").string() + ":/usr/bin:/bin"}}});
    return r && r->ok() ? r->out : std::string("failed");
  };
  const std::string real = (top / "nvcc-real").string();
  EXPECT_EQ(
      run({"-ccbin", (host_dir / "gcc").string(), "-arch=sm_80", "-c", "a.cu", "-o", "o/a.o"}),
      "launcher\n" + real +
          "\n-c\na.cu\n-o\no/a.o\n-gencode=arch=compute_90,code=sm_90\n-frandom-seed=a.o\n-ccbin\n/usr/bin/g++\n");
  EXPECT_EQ(run({"--compiler-bindir=" + host_dir.string(), "-c", "a.cu"}),
            "launcher\n" + real + "\n-c\na.cu\n-ccbin\n/usr/bin/g++\n");
  EXPECT_EQ(run({"-ccbin", "/opt/clang/bin/clang++", "-c", "a.cu"}),
            "launcher\n" + real + "\n-ccbin\n/opt/clang/bin/clang++\n-c\na.cu\n");
  EXPECT_EQ(run({"--version"}), "nvcc-real\n--version\n-ccbin\n/usr/bin/g++\n");

  // The host wrappers: a compile through the launcher (with -g0 last), a link without it.
  plan::Plan p = base_plan("/src/ops", "/w");
  compiler::HostChoice host;
  host.compiler.cc = "/usr/bin/gcc";
  host.compiler.cxx = "/usr/bin/g++";
  p.host = host;
  auto hw = compile::host_wrappers(m.fs, top / "cache", p, "launcher", {OPFORGE_BINARY});
  ASSERT_TRUE(hw);
  EXPECT_NE(hw->dir, compile::host_wrappers(m.fs, top / "cache", p, "", {OPFORGE_BINARY})->dir);
  ASSERT_TRUE(compile::write_host_wrappers(m.fs, *hw));
  std::ofstream(top / "x.c") << "int main(void) { return 0; }\n";
  auto r = m.proc.run({.argv = {hw->cc.string(), "-c", (top / "x.c").string(), "-o", (top / "x.o").string()},
                       .env = std::map<std::string, std::string>{{"PATH", (top / "bin").string() + ":/usr/bin:/bin"}}});
  ASSERT_TRUE(r && r->ok());
  EXPECT_EQ(r->out,
            "launcher\n/usr/bin/gcc\n-c\n" + (top / "x.c").string() + "\n-o\n" + (top / "x.o").string() + "\n-g0\n");
  fs::remove_all(top);
}

// The real nvcc 13.0: a kernel using CCCL's customization-point objects, compiled twice through the
// wrapper, gives the same (stripped) object only with the per-object -frandom-seed (nvcc otherwise names the
// internal-linkage objects after its process id, as causal-conv1d's did).
TEST(CompileCommandBackend, NvccWrapperSeedsEachObject) {
  const fs::path real = "/usr/local/cuda-13.0/bin/nvcc";
  if (!fs::exists(real)) GTEST_SKIP() << "nvcc 13.0 is not at " << real;
  fs::path top = fs::temp_directory_path() / ("opforge-nvccseed-" + std::to_string(::getpid()));
  fs::remove_all(top);
  fs::create_directories(top);
  std::ofstream(top / "m.cu") << "#include <cuda/std/iterator>\n"
                                 "template <typename T> __global__ void k(T* x) {\n"
                                 "  T a[4] = {};\n"
                                 "  x[threadIdx.x] *= *cuda::std::begin(a);\n"
                                 "}\n"
                                 "template <typename T> void run(T* x) { k<T><<<1, 32>>>(x); }\n"
                                 "template void run<float>(float*);\n";
  auto m = probe::real_machine();
  auto compile_twice = [&](bool seed) {
    auto w = nvcc_wrapper(top / "cache", real, "", {"-gencode=arch=compute_90,code=sm_90"}, seed);
    EXPECT_TRUE(compile::write_nvcc_wrapper(m.fs, w));
    std::vector<std::string> objects;
    for (int i = 0; i < 2; ++i) {
      const fs::path out = top / ("m" + std::to_string(i)) / "m.o";
      fs::create_directories(out.parent_path());
      auto r =
          m.proc.run({.argv = {w.path.string(), "-c", "-Xcompiler=-fPIC", (top / "m.cu").string(), "-o", out.string()},
                      .cwd = top});
      EXPECT_TRUE(r && r->ok()) << (r ? r->out + r->err : r.error().message);
      // as the wheel holds it: stripped (the symbol table keeps a tmpxft_<pid> file name)
      auto st = m.proc.run({.argv = {"strip", "--strip-unneeded", out.string()}});
      EXPECT_TRUE(st && st->ok());
      objects.push_back(m.fs.read_file(out).value_or(""));
    }
    return objects;
  };
  auto seeded = compile_twice(true);
  EXPECT_FALSE(seeded[0].empty());
  EXPECT_EQ(seeded[0], seeded[1]);
  auto plain = compile_twice(false);
  EXPECT_NE(plain[0], plain[1]);  // why the seed is there: the process id shows in the names

  // The same source in two folders (a build server of sccache-dist sees it in a folder of its own
  // each time): the same object only with --orig_src_path_name, cicc's and cudafe++'s, which would
  // otherwise name the _INTERNAL_ prefixes after the source's path.
  auto two_folders = [&](bool stable_names) {
    auto w = nvcc_wrapper(top / "cache", real, "", {"-gencode=arch=compute_90,code=sm_90"}, true, {}, stable_names);
    EXPECT_TRUE(compile::write_nvcc_wrapper(m.fs, w));
    std::vector<std::string> objects;
    for (const char* folder : {"here", "there"}) {
      fs::create_directories(top / folder);
      fs::copy_file(top / "m.cu", top / folder / "m.cu", fs::copy_options::overwrite_existing);
      const fs::path out = top / folder / "m.o";
      auto r = m.proc.run(
          {.argv = {w.path.string(), "-c", "-Xcompiler=-fPIC", (top / folder / "m.cu").string(), "-o", out.string()},
           .cwd = top / folder});
      EXPECT_TRUE(r && r->ok()) << (r ? r->out + r->err : r.error().message);
      auto st = m.proc.run({.argv = {"strip", "--strip-unneeded", out.string()}});
      EXPECT_TRUE(st && st->ok());
      objects.push_back(m.fs.read_file(out).value_or(""));
    }
    return objects;
  };
  auto named = two_folders(true);
  EXPECT_EQ(named[0], named[1]);
  auto unnamed = two_folders(false);
  EXPECT_NE(unnamed[0], unnamed[1]);
  fs::remove_all(top);
}

// The real Python with the watch first on PYTHONPATH: a URL opened and a socket connected are named
// once each, and the sitecustomize the watch shadows still runs.
TEST(CompileCommandBackend, NetworkWatchNamesWhatTheBuildReaches) {
  fs::path top = fs::temp_directory_path() / ("opforge-netwatch-" + std::to_string(::getpid()));
  fs::remove_all(top);
  fs::create_directories(top / "other");
  auto m = probe::real_machine();
  auto w = compile::network_watch(top / "cache");
  ASSERT_TRUE(compile::write_network_watch(m.fs, w));
  std::ofstream(top / "other" / "sitecustomize.py") << "import builtins\nbuiltins.OTHER_SITE = 1\n";
  settings::ChildEnv child({{"PATH", "/usr/bin:/bin"}, {"PYTHONPATH", (top / "other").string()}});
  compile::add_watch_environment(child, w, top / "arch.log");
  auto env = std::move(child).vars();
  EXPECT_EQ(env["PYTHONPATH"], w.dir.string() + ":" + (top / "other").string());
  EXPECT_EQ(env["OPFORGE_NVCC_ARCH_LOG"], (top / "arch.log").string());
  const std::string script =
      "import builtins, socket, urllib.request\n"
      "for _ in range(2):\n"
      "    try:\n"
      "        urllib.request.urlopen('http://127.0.0.1:9/x.whl', timeout=5)\n"
      "    except OSError:\n"
      "        pass\n"
      "print(builtins.OTHER_SITE)\n";
  auto r = m.proc.run({.argv = {"/usr/bin/python3", "-c", script}, .env = env});
  ASSERT_TRUE(r && r->ok()) << (r ? r->err : r.error().message);
  EXPECT_EQ(r->out, "1\n");
  const std::string tail =
      " (the build reached the network: it fails where there is none, and fetches unverified files where there "
      "is; look for the project's switch to build from source)\n";
  EXPECT_EQ(r->err,
            "opforge: network: GET http://127.0.0.1:9/x.whl" + tail + "opforge: network: connect 127.0.0.1:9" + tail);
  fs::remove_all(top);
}

// scikit-build-core's wheel staging folder (tempfile.TemporaryDirectory()) is CMake's install
// prefix, which llama.cpp's llama.pc carries into the wheel: with the variable, two processes make
// the same temporary names, in the folder named; without it, Python's own random ones.
TEST(CompileCommandBackend, NetworkWatchMakesPythonsTemporaryNamesStable) {
  fs::path top = fs::temp_directory_path() / ("opforge-pytemp-" + std::to_string(::getpid()));
  fs::remove_all(top);
  auto m = probe::real_machine();
  auto w = compile::network_watch(top / "cache");
  ASSERT_TRUE(compile::write_network_watch(m.fs, w));
  settings::ChildEnv watched(settings::ChildEnv::Vars{{"PATH", "/usr/bin:/bin"}});
  compile::add_watch_environment(watched, w, {});
  const auto env = watched.vars();
  auto names = [&](const std::map<std::string, std::string>& e) {
    const std::string script =
        "import os, tempfile\n"
        "with tempfile.TemporaryDirectory() as a:\n"
        "    b = tempfile.mkdtemp()\n"
        "    print(a, b)\n"
        "    os.rmdir(b)\n";
    auto r = m.proc.run({.argv = {"/usr/bin/python3", "-c", script}, .env = e});
    return r && r->ok() ? r->out : std::string("python failed: ") + (r ? r->err : r.error().message);
  };
  settings::ChildEnv stable_env(env);
  compile::add_stable_temp_names(stable_env, "0123456789abcdef");
  auto stable = stable_env.vars();
  EXPECT_EQ(stable[compile::kPythonTempVariable], "/tmp/opforge-py-0123456789abcdef");
  stable[compile::kPythonTempVariable] = (top / "py").string();  // the test's own folder
  const std::string first = names(stable);
  EXPECT_EQ(first, names(stable));
  EXPECT_TRUE(first.starts_with((top / "py" / "tmp").string())) << first;
  EXPECT_NE(first.find(" " + (top / "py" / "tmp").string()), std::string::npos) << first;
  const std::string plain = names(env);
  EXPECT_NE(plain, names(env));  // 36^8 names each: Python's own are random
  EXPECT_EQ(plain.find(top.string()), std::string::npos) << plain;
  fs::remove_all(top);
}

TEST(CompileCommandBackend, ProjectArchTargetsReadsEverySpelling) {
  EXPECT_EQ(compile::project_arch_targets(""), std::vector<std::string>{});
  EXPECT_EQ(compile::project_arch_targets(" -arch=native\n -arch all-major\n"),
            (std::vector<std::string>{"all-major", "native"}));
  EXPECT_EQ(compile::project_arch_targets(" -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90,code=sm_90\n"
                                          " -gencode arch=compute_90,code=sm_90\n"),
            (std::vector<std::string>{"sm_90", "sm_90a"}));
  // -gencode without code=: nvcc compiles the arch's PTX
  EXPECT_EQ(compile::project_arch_targets(" --generate-code=arch=compute_80\n"),
            std::vector<std::string>{"compute_80"});
}

TEST(CompileCommandBackend, NvccWrapperFolderFollowsTheRealNvccsStamp) {
  // ccache checks a compiler by its mtime: the wrapper's own would hide an nvcc upgraded in place.
  auto a = nvcc_wrapper("/c", "/cuda/bin/nvcc", "/cuda/bin/nvcc 100 1");
  auto b = nvcc_wrapper("/c", "/cuda/bin/nvcc", "/cuda/bin/nvcc 100 2");
  EXPECT_EQ(a.text, b.text);
  EXPECT_NE(a.path, b.path);
}

namespace {

/// sections of an ELF file, from binutils' readelf (the tool a user would ask).
std::string section_names(const fs::path& file) {
  auto r = probe::real_machine().proc.run({.argv = {"readelf", "-S", "-W", file.string()}});
  return r && r->ok() ? r->out : std::string("readelf failed");
}

}  // namespace

// Real gcc: the wrappers drop what -g adds, and only that — the stripped library is the same bytes.
TEST(CompileCommandBackend, HostWrappersCompileWithoutDebugInfoAndTheStrippedLibraryIsUnchanged) {
  auto m = probe::real_machine();
  auto host = compiler::host_without_toolkit(m, "auto");
  if (!host) GTEST_SKIP() << "no host compiler: " << host.error().message;
  fs::path top = fs::temp_directory_path() / ("opforge-hostwrap-" + std::to_string(::getpid()));
  fs::remove_all(top);
  fs::create_directories(top);
  plan::Plan p = base_plan(top / "src", top);
  p.host = *host;
  const bool gcc = host->compiler.family == compiler::Family::gcc;
  p.gcc_gc_heap_kib = 1048576;  // [build] gcc_gc_heap_mib's default: the objects stay the same
  auto w = compile::host_wrappers(m.fs, top / "cache", p, "", {OPFORGE_BINARY});
  ASSERT_TRUE(w);
  EXPECT_EQ(w->dir.parent_path(), top / "cache" / "host");
  ASSERT_TRUE(compile::write_host_wrappers(m.fs, *w));
  const auto written = fs::last_write_time(w->cxx);
  ASSERT_TRUE(compile::write_host_wrappers(m.fs, *w));  // unchanged: ccache keys on its mtime
  EXPECT_EQ(fs::last_write_time(w->cxx), written);

  std::ofstream(top / "op.cpp") << "#include <vector>\n#include <string>\n"
                                   "extern \"C\" int op(int n) { std::vector<std::string> v(n, \"x\");\n"
                                   "  int s = 0; for (auto& e : v) s += e.size(); return s; }\n";
  auto run = [&](std::vector<std::string> argv) {
    auto r = m.proc.run({.argv = std::move(argv), .cwd = top});
    ASSERT_TRUE(r && r->ok()) << (r ? r->err : r.error().message);
  };
  for (const auto& [cxx, tag] : {std::pair{w->cxx, std::string("wrapped")}, {host->compiler.cxx, "direct"}}) {
    run({cxx.string(), "-g", "-O2", "-fPIC", "-c", "op.cpp", "-o", tag + ".o"});
    run({cxx.string(), "-shared", "-Wl,--build-id=none", tag + ".o", "-o", "lib" + tag + ".so"});
  }
  if (gcc) {  // the option reaches gcc's compiler proper (-### prints its commands)
    auto v = m.proc.run({.argv = {w->cxx.string(), "-###", "-c", "op.cpp", "-o", "x.o"}, .cwd = top});
    ASSERT_TRUE(v);
    EXPECT_NE((v->out + v->err).find("--param=ggc-min-heapsize=1048576"), std::string::npos) << v->err;
  }
  EXPECT_EQ(section_names(top / "wrapped.o").find(".debug_info"), std::string::npos);
  EXPECT_NE(section_names(top / "direct.o").find(".debug_info"), std::string::npos);  // -g did reach gcc
  run({"strip", "--strip-unneeded", "libwrapped.so", "libdirect.so"});
  EXPECT_EQ(slurp(top / "libwrapped.so"), slurp(top / "libdirect.so"));
  // Anything that is not a compile passes through unchanged.
  auto r = m.proc.run({.argv = {w->cc.string(), "-dumpversion"}});
  auto d = m.proc.run({.argv = {host->compiler.cc.string(), "-dumpversion"}});
  ASSERT_TRUE(r && d);
  EXPECT_EQ(r->out, d->out);

  // The build's CC, CXX, nvcc's -ccbin and the front of PATH name them.
  p.exports = {{"PATH", "/usr/local/cuda/bin:/usr/bin"}, {"CC", host->compiler.cc.string()}};
  auto env = compile::command_environment({{"PATH", "/bin"}}, p, "/t", {}, &*w);
  EXPECT_EQ(env["CC"], w->cc.string());
  EXPECT_EQ(env["CXX"], w->cxx.string());
  EXPECT_EQ(env["PATH"], w->dir.string() + ":/usr/local/cuda/bin:/usr/bin");
  EXPECT_EQ(env["NVCC_PREPEND_FLAGS"], "-ccbin " + w->dir.string());
  fs::remove_all(top);
}

namespace {

/// A plan whose host compiler is a pair of empty gcc and g++ scripts in `top`/bin (made afresh).
plan::Plan fake_gcc_plan(const fs::path& top) {
  fs::remove_all(top);
  fs::create_directories(top / "bin");
  for (const char* n : {"gcc", "g++"}) {
    std::ofstream(top / "bin" / n) << "#!/bin/sh\n";
    fs::permissions(top / "bin" / n, fs::perms::owner_all);
  }
  plan::Plan p = base_plan(top / "src", top);
  compiler::HostChoice host;
  host.compiler.cc = top / "bin" / "gcc";
  host.compiler.cxx = top / "bin" / "g++";
  host.compiler.family = compiler::Family::gcc;
  p.host = host;
  return p;
}

}  // namespace

TEST(CompileCommandBackend, HostWrappersLetGccCollectItsGarbageLaterAndClangAlone) {
  fs::path top = fs::temp_directory_path() / ("opforge-hostgc-" + std::to_string(::getpid()));
  auto m = probe::real_machine();
  plan::Plan p = fake_gcc_plan(top);
  // Each script's rule (its NAME.rule.json), read back.
  auto rule = [&](std::string_view name) {
    auto w = compile::host_wrappers(m.fs, top / "cache", p);
    for (const auto& [n, text] : w->rules)
      if (n == std::string(name) + ".rule.json")
        if (auto r = compile::parse_host_rule_json(text, n)) return std::make_pair(w->dir, *r);
    return std::make_pair(fs::path(), compile::HostRule{});
  };
  const auto [plain_dir, plain] = rule("g++");
  EXPECT_EQ(plain.gc_param, "");
  p.gcc_gc_heap_kib = 1048576;
  const auto [gc_dir, gc] = rule("g++");
  EXPECT_EQ(gc.gc_param, "--param=ggc-min-heapsize=1048576");
  EXPECT_EQ(compile::rewrite_host({"-O2", "-c", "a.cpp"}, gc).argv,  // -g0 last
            (std::vector<std::string>{(top / "bin" / "g++").string(), "-O2", "-c", "a.cpp",
                                      "--param=ggc-min-heapsize=1048576", "-g0"}));
  EXPECT_EQ(rule("gcc").second.gc_param, "--param=ggc-min-heapsize=1048576");
  EXPECT_NE(gc_dir, plain_dir);  // a new setting: new wrappers, new ccache keys
  // With precompiled headers the option is among the compile's own arguments (what __host-compile
  // gets), so the header is made with it too; only the C++ compilers' rules name the store.
  p.pch = true;
  const auto [pch_dir, pch] = rule("g++");
  EXPECT_FALSE(pch.pch_dir.empty());
  EXPECT_TRUE(rule("gcc").second.pch_dir.empty());
  EXPECT_EQ(compile::rewrite_host({"-c", "a.cpp"}, pch).args,
            (std::vector<std::string>{"-c", "a.cpp", "--param=ggc-min-heapsize=1048576"}));
  p.pch = false;
  p.host->compiler.family = compiler::Family::clang;  // clang has no such collector
  EXPECT_EQ(rule("clang++").second.gc_param, "");
  fs::remove_all(top);
}

TEST(CompileCommandBackend, HostWrappersFollowTheRealCompilersStamp) {
  fs::path top = fs::temp_directory_path() / ("opforge-hoststamp-" + std::to_string(::getpid()));
  auto m = probe::real_machine();
  plan::Plan p = fake_gcc_plan(top);
  auto before = compile::host_wrappers(m.fs, top / "cache", p);
  fs::last_write_time(top / "bin" / "g++", fs::last_write_time(top / "bin" / "g++") + std::chrono::hours(1));
  auto after = compile::host_wrappers(m.fs, top / "cache", p);
  ASSERT_TRUE(before && after);
  EXPECT_NE(before->dir, after->dir);  // an upgraded compiler: new wrappers, new ccache keys
  p.host->compiler.cxx = "g++";        // not a path the wrappers can run by
  EXPECT_FALSE(compile::host_wrappers(m.fs, top / "cache", p));
  p.host.reset();
  EXPECT_FALSE(compile::host_wrappers(m.fs, top / "cache", p));
  fs::remove_all(top);
}

TEST(CompileCommandBackend, ScratchTreeIsAFreshCopyAtAContentAddressedPath) {
  probe::FakeMachine fake;
  auto& fs = fake.fs;
  const probe::Machine m = fake.machine();
  for (const char* top : {"/one/src", "/elsewhere/deeper/src"}) {
    fs.add_file(std::string(top) + "/setup.py", "print('hi')\n");
    fs.add_file(std::string(top) + "/run.sh", "#!/bin/sh\n", 0755);
    fs.add_file(std::string(top) + "/csrc/k.cu", "__global__ void k() {}\n");
    fs.add_symlink(std::string(top) + "/pkg/op_builder", "../op_builder");
    fs.add_file(std::string(top) + "/op_builder/builder.py", "class OpBuilder: pass\n");
  }
  // Leftovers of an earlier in-tree build and the git folder are never copied.
  fs.add_file("/one/src/build/lib/stale.so", "old");
  fs.add_file("/one/src/dist/old.whl", "old");
  fs.add_file("/one/src/.git/HEAD", "ref: refs/heads/main\n");
  fs.add_file("/one/src/csrc/__pycache__/x.pyc", "x");
  auto a = compile::make_scratch_tree(m, "/one/src", "/cache");
  ASSERT_TRUE(a) << a.error().render();
  std::string first = a->root.string();
  EXPECT_EQ(a->root.parent_path(), fs::path("/cache/trees"));
  EXPECT_EQ(*fs.read_file(a->root / "csrc/k.cu"), "__global__ void k() {}\n");
  EXPECT_TRUE(fs.is_executable(a->root / "run.sh"));
  EXPECT_EQ(fs.type_of(a->root / "pkg/op_builder"), probe::FileType::symlink);
  EXPECT_EQ(fs.type_of(a->root / "build"), probe::FileType::none);
  EXPECT_EQ(fs.type_of(a->root / "dist"), probe::FileType::none);
  EXPECT_EQ(fs.type_of(a->root / ".git"), probe::FileType::none);
  EXPECT_EQ(fs.type_of(a->root / "csrc/__pycache__"), probe::FileType::none);
  // A leftover inside the scratch tree is gone at the next build: it is made fresh.
  fs.add_file(a->root / "build/leftover.o", "x");
  auto b = compile::make_scratch_tree(m, "/elsewhere/deeper/src", "/cache");
  ASSERT_TRUE(b) << b.error().render();
  EXPECT_EQ(b->root.string(), first);  // same content, same path, from any folder
  EXPECT_EQ(fs.type_of(b->root / "build"), probe::FileType::none);
  fs.add_file("/elsewhere/deeper/src/csrc/k.cu", "__global__ void k2() {}\n");
  auto c = compile::make_scratch_tree(m, "/elsewhere/deeper/src", "/cache");
  ASSERT_TRUE(c);
  EXPECT_NE(c->root.string(), first);
}

TEST(CompileCommandBackend, ATreeThatHoldsTheCacheFolderIsRefused) {
  // Found by resume_fuzz: a link to the cache folder was copied, cache and all, into the tree, so
  // the next build saw another source and never resumed (each copy larger than the last).
  probe::FakeMachine fake;
  auto& fs = fake.fs;
  const probe::Machine m = fake.machine();
  fs.add_file("/src/setup.py", "print('hi')\n");
  fs.add_file("/cache/trees/0123456789abcdef/setup.py", "old\n");
  fs.add_symlink("/src/csrc", "/cache");
  auto a = compile::make_scratch_tree(m, "/src", "/cache");
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().kind, ErrorKind::bad_input);
  EXPECT_NE(a.error().message.find("'/src/csrc' holds opforge's cache folder (/cache) or a scratch tree made there"),
            std::string::npos)
      << a.error().render();
  fs.remove_all("/src/csrc");
  fs.add_symlink("/src/csrc", "/cache/trees");  // inside it
  EXPECT_FALSE(compile::make_scratch_tree(m, "/src", "/cache"));
  // A source folder around the cache: its walk reaches the cache folder.
  fs.remove_all("/src/csrc");
  EXPECT_FALSE(compile::make_scratch_tree(m, "/", "/cache"));
  EXPECT_TRUE(compile::make_scratch_tree(m, "/src", "/cache"));
  // A source inside the cache is not one: [source] git checks out there (CI's DeepSpeed build
  // was refused for its accelerator/ folder when this check took every folder inside the cache).
  fs.add_file("/cache/git/repo-1/trees/abc/accelerator/real.py", "x = 1\n");
  fs.add_file("/cache/git/repo-1/trees/abc/setup.py", "setup()\n");
  EXPECT_TRUE(compile::make_scratch_tree(m, "/cache/git/repo-1/trees/abc", "/cache"));
  fs.add_symlink("/src/csrc", "/cache/git/repo-1/trees/abc/accelerator");
  EXPECT_TRUE(compile::make_scratch_tree(m, "/src", "/cache"));
  // Nor is a scratch tree's own folder when the source is that tree.
  fs.add_file("/cache/trees/0123456789abcdef/csrc/op.cpp", "int op();\n");
  EXPECT_TRUE(compile::make_scratch_tree(m, "/cache/trees/0123456789abcdef", "/cache"));
}

TEST(CompileCommandBackend, AKeptTreeOfTheSameContentAndKeyIsResumedAnyOtherCopiedAfresh) {
  probe::FakeMachine fake;
  auto& fs = fake.fs;
  const probe::Machine m = fake.machine();
  fs.add_file("/src/setup.py", "setup()\n");
  fs.add_file("/src/csrc/a.cu", "__global__ void a() {}\n");
  fs.add_file("/src/csrc/b.cu", "__global__ void b() {}\n");
  std::string key = "k1";
  const compile::ScratchResume resume{[&](const fs::path&) { return key; }};
  auto first = compile::make_scratch_tree(m, "/src", "/cache", {}, resume);
  ASSERT_TRUE(first) << first.error().render();
  EXPECT_FALSE(first->resumed);
  EXPECT_TRUE(first->not_why.empty());
  ASSERT_EQ(fs.type_of(first->root / compile::kResumeStamp), probe::FileType::regular);
  // The build was killed: its finished object, ninja's state and a source it changed stay.
  fs.add_file(first->root / "build/temp/csrc/a.o", "object a");
  fs.add_file(first->root / "build/temp/.ninja_log", "# ninja log v7\n1\t5\t9\tcsrc/a.o\tab\n");
  fs.add_file(first->root / "csrc/b.cu", "__global__ void b_edited() {}\n");
  fs.set_mtime(first->root / "csrc/a.cu", 42);
  first->lock.reset();

  auto again = compile::make_scratch_tree(m, "/src", "/cache", {}, resume);
  ASSERT_TRUE(again) << again.error().render();
  EXPECT_EQ(again->root, first->root);
  EXPECT_TRUE(again->resumed);
  EXPECT_EQ(again->restored, 1);  // b.cu holds the source's bytes again
  EXPECT_EQ(*fs.read_file(again->root / "csrc/b.cu"), "__global__ void b() {}\n");
  EXPECT_EQ(fs.stamp(again->root / "csrc/a.cu")->mtime_ns, 42);  // untouched: ninja keeps a.o
  EXPECT_EQ(*fs.read_file(again->root / "build/temp/csrc/a.o"), "object a");
  again->lock.reset();

  // Without the resume key (the compile commands changed), or without a stamp (a copy cut short),
  // or without resume at all: a fresh copy.
  key = "k2";
  auto other = compile::make_scratch_tree(m, "/src", "/cache", {}, resume);
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->resumed);
  EXPECT_NE(other->not_why.find("other compile commands"), std::string::npos) << other->not_why;
  EXPECT_EQ(fs.type_of(other->root / "build"), probe::FileType::none);
  fs.add_file(other->root / "build/x.o", "x");
  ASSERT_TRUE(fs.remove(other->root / compile::kResumeStamp));
  other->lock.reset();
  auto cut = compile::make_scratch_tree(m, "/src", "/cache", {}, resume);
  ASSERT_TRUE(cut);
  EXPECT_FALSE(cut->resumed);
  EXPECT_NE(cut->not_why.find("no complete copy"), std::string::npos) << cut->not_why;
  EXPECT_EQ(fs.type_of(cut->root / "build"), probe::FileType::none);
  fs.add_file(cut->root / "build/x.o", "x");
  cut->lock.reset();
  auto plain = compile::make_scratch_tree(m, "/src", "/cache");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->resumed);
  EXPECT_EQ(fs.type_of(plain->root / "build"), probe::FileType::none);
  EXPECT_EQ(fs.type_of(plain->root / compile::kResumeStamp), probe::FileType::none);
}

TEST(CompileCommandBackend, AFifoOrDevZeroInPlaceOfTheResumeStampIsIgnoredAndMadeAgain) {
  // On the real file system: a FIFO where the stamp belongs hung the build (open waited for a
  // writer), /dev/zero behind a link ran it out of memory. Both are said, and the tree is copied
  // afresh with a stamp of its own.
  auto m = probe::real_machine();
  auto dir = m.fs.make_temp_directory("opforge-stamp-");
  ASSERT_TRUE(dir);
  ASSERT_TRUE(m.fs.create_directories(*dir / "src"));
  ASSERT_TRUE(m.fs.write_file_atomic(*dir / "src/setup.py", "setup()\n", 0644));
  const compile::ScratchResume resume{[](const fs::path&) { return std::string("k"); }};
  for (const std::string kind : {"fifo", "dev-zero"}) {
    auto first = compile::make_scratch_tree(m, *dir / "src", *dir / "cache", {}, resume);
    ASSERT_TRUE(first) << first.error().render();
    const fs::path stamp = first->root / compile::kResumeStamp;
    ASSERT_TRUE(m.fs.remove(stamp));
    if (kind == "fifo") ASSERT_EQ(::mkfifo(stamp.c_str(), 0644), 0);
    else fs::create_symlink("/dev/zero", stamp);
    first->lock.reset();
    auto again = compile::make_scratch_tree(m, *dir / "src", *dir / "cache", {}, resume);
    ASSERT_TRUE(again) << again.error().render();
    EXPECT_FALSE(again->resumed);
    EXPECT_EQ(again->not_why, stamp.string() + (kind == "fifo" ? ": is a FIFO" : ": is a character device") +
                                  ", not a regular file, so the stamp is ignored and made again")
        << kind;
    EXPECT_EQ(m.fs.type_of(stamp), probe::FileType::regular) << kind;
    again->lock.reset();
  }
  ASSERT_TRUE(m.fs.remove_all(*dir));
}

TEST(CompileCommandBackend, TheResumeKeyFollowsWhatDecidesTheCompilesNotTheJobCount) {
  const std::vector<std::string> cmd = {"python", "setup.py", "bdist_wheel"};
  std::map<std::string, std::string> env = {
      {"PATH", "/usr/bin"}, {"NVCC_APPEND_FLAGS", "-O2"}, {"MAX_JOBS", "2"}, {"HOME", "/root"}, {"MY_SWITCH", "1"}};
  const auto base = compile::resume_key(cmd, {"torch", "nvcc"}, env, {"MY_SWITCH"});
  auto with = [&](const std::string& k, const std::string& v) {
    auto e = env;
    e[k] = v;
    return compile::resume_key(cmd, {"torch", "nvcc"}, e, {"MY_SWITCH"});
  };
  EXPECT_EQ(with("MAX_JOBS", "16"), base);    // more jobs compile the same objects
  EXPECT_EQ(with("HOME", "/home/ci"), base);  // nothing a compile reads
  EXPECT_EQ(with("OPFORGE_NVCC_ARCH_LOG", "/elsewhere/nvcc-arch.log"), base);
  EXPECT_NE(with("NVCC_APPEND_FLAGS", "-O3"), base);
  EXPECT_NE(with("CUDA_HOME", "/usr/local/cuda-13.1"), base);
  EXPECT_NE(with("TORCH_CUDA_ARCH_LIST", "8.0"), base);
  EXPECT_NE(with("MY_SWITCH", "0"), base);  // the recipe's [build.env]
  // CMake's and scikit-build-core's: the arch list and the project's -D arguments, not their jobs.
  EXPECT_EQ(with("CMAKE_BUILD_PARALLEL_LEVEL", "16"), base);
  EXPECT_NE(with("CMAKE_ARGS", "-DCMAKE_CUDA_ARCHITECTURES=90-real"), base);
  EXPECT_NE(with("CUDAARCHS", "90-real"), base);
  EXPECT_NE(with("CMAKE_CUDA_COMPILER_LAUNCHER", "ccache"), base);
  EXPECT_NE(with("SKBUILD_CMAKE_DEFINE", "GGML_CUDA=ON"), base);
  EXPECT_NE(with("PATH", "/opt/bin:/usr/bin"), base);
  EXPECT_NE(compile::resume_key(cmd, {"other torch", "nvcc"}, env, {"MY_SWITCH"}), base);
  EXPECT_NE(compile::resume_key({"python3", "setup.py", "bdist_wheel"}, {"torch", "nvcc"}, env, {"MY_SWITCH"}), base);
}

TEST(CompileCommandBackend, NinjaLogsSayWhichStepsWereReusedAndWhichCompiled) {
  probe::FakeFileSystem fs;
  const std::string head = "# ninja log v7\n";
  fs.add_file("/t/build/temp.linux/.ninja_log",
              head + "0\t4000\t1\t/t/build/temp.linux/csrc/a.o\th1\n100\t6500\t2\t/t/build/temp.linux/csrc/b.o\th2\n");
  fs.add_file("/t/build/temp.linux/csrc/a.o", "a");
  fs.add_symlink("/t/loop", "/t/build");  // links are not followed
  auto before = compile::read_ninja_logs(fs, "/t");
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before["build/temp.linux/.ninja_log"].count("build/temp.linux/csrc/a.o"), 1u);
  // The resumed run: b ran again (a new line), c is new, a is kept; a line cut short by a kill is
  // ignored, as ninja ignores it.
  fs.add_file("/t/build/temp.linux/.ninja_log",
              *fs.read_file("/t/build/temp.linux/.ninja_log") +
                  "0\t3000\t3\t/t/build/temp.linux/csrc/b.o\th2\n10\t2510\t4\tcsrc/c.o\th3\n5\t7");
  auto reuse = compile::compare_ninja_logs(before, compile::read_ninja_logs(fs, "/t"));
  EXPECT_EQ(reuse.reused, 1);
  EXPECT_EQ(reuse.compiled, 2);
  ASSERT_EQ(reuse.times.size(), 2u);
  EXPECT_EQ(reuse.times[0].first, "build/temp.linux/csrc/b.o");
  EXPECT_DOUBLE_EQ(reuse.times[0].second, 3.0);
  EXPECT_EQ(reuse.times[1].first, "build/temp.linux/csrc/c.o");  // relative: to the log's folder
  EXPECT_DOUBLE_EQ(reuse.times[1].second, 2.5);
  // A fresh tree: everything compiled.
  auto fresh = compile::compare_ninja_logs({}, before);
  EXPECT_EQ(fresh.reused, 0);
  EXPECT_EQ(fresh.compiled, 2);
}

TEST(CompileCommandBackend, TheCommandRunsThroughTheShimTheBuildMadeFirst) {
  probe::FakeMachine fake;
  auto& fs = fake.fs;
  auto& proc = fake.proc;
  fake.env.set("PATH", "/usr/bin");
  const probe::Machine m = fake.machine();
  fs.add_file("/src/setup.py", "");
  fs.add_file("/usr/bin/gcc-11", "", 0755);
  fs.add_file("/usr/bin/g++-11", "", 0755);
  auto p = base_plan("/src", "/w");
  compiler::HostChoice host;
  host.compiler.cc = "/usr/bin/gcc-11";
  host.compiler.cxx = "/usr/bin/g++-11";
  host.shim_dir = "/w/shim";
  p.host = host;
  p.recipe.build.command = {"python3", "setup.py", "bdist_wheel"};
  proc.on({"python3"}, probe::ProcessResult{.exit_code = 0, .out = "building\n"});
  // The backend only checks the shim: the pipeline makes it (compiler::ensure_shim) first.
  auto missing =
      (fake.env.set("OPFORGE_CACHE_DIR", "/cache"), compile::run_command_backend(m, p, {.wheel_dir = p.dist_dir}));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::failed);
  EXPECT_EQ(missing.error().message,
            "internal: the compiler shim /w/shim has no g++: compiler::ensure_shim makes it before a backend runs");
  EXPECT_TRUE(proc.calls().empty());

  ASSERT_TRUE(compiler::ensure_shim(fs, host));
  EXPECT_EQ(*fs.read_symlink("/w/shim/g++"), fs::path("/usr/bin/g++-11"));
  EXPECT_EQ(*fs.read_symlink("/w/shim/gcc"), fs::path("/usr/bin/gcc-11"));
  auto r = (fake.env.set("OPFORGE_CACHE_DIR", "/cache"), compile::run_command_backend(m, p, {.wheel_dir = p.dist_dir}));
  ASSERT_FALSE(r);  // the fake command made no wheel
  ASSERT_EQ(proc.calls().size(), 1u);
  // CC and CXX are the -g0 wrappers, which run the shim's gcc and g++.
  const fs::path cc = proc.calls()[0].env->at("CC");
  const fs::path cxx = proc.calls()[0].env->at("CXX");
  EXPECT_EQ(cxx.parent_path().parent_path(), fs::path("/cache/host"));
  for (const auto& [script, shim] : {std::pair{cc, "/w/shim/gcc"}, {cxx, "/w/shim/g++"}}) {
    auto rule = compile::parse_host_rule_json(fs.read_file(script.string() + ".rule.json").value_or(""), "rule");
    ASSERT_TRUE(rule) << rule.error().message;
    EXPECT_EQ(compile::rewrite_host({"-c", "a.cpp"}, *rule).argv,
              (std::vector<std::string>{shim, "-c", "a.cpp", "-g0"}));
  }
  EXPECT_EQ(proc.calls()[0].cwd.parent_path(), fs::path("/cache/trees"));
}

TEST(CompileCommandBackend, RunsInSourceFolderThroughTheProcessRunner) {
  probe::FakeMachine fake;
  auto& fs = fake.fs;
  auto& proc = fake.proc;
  fake.env.set("PATH", "/usr/bin");
  const probe::Machine m = fake.machine();
  auto p = base_plan("/src", "/w");
  p.recipe.build.command = {"python3", "setup.py", "bdist_wheel"};
  proc.on({"python3"}, probe::ProcessResult{.exit_code = 0, .out = "building\n"});
  fs.add_file("/src/setup.py", "");
  auto r = (fake.env.set("OPFORGE_CACHE_DIR", "/cache"), compile::run_command_backend(m, p, {.wheel_dir = p.dist_dir}));
  ASSERT_FALSE(r);  // the fake command made no wheel
  EXPECT_NE(r.error().message.find("made no file matching \"dist/*.whl\""), std::string::npos) << r.error().message;
  ASSERT_EQ(proc.calls().size(), 1u);
  EXPECT_EQ(proc.calls()[0].argv, (std::vector<std::string>{"python3", "setup.py", "bdist_wheel"}));
  // It runs in a fresh copy, never in the source tree itself.
  EXPECT_EQ(proc.calls()[0].cwd.parent_path(), fs::path("/cache/trees"));
  EXPECT_EQ(proc.calls()[0].output, probe::Output::lines);
  EXPECT_EQ(*fs.read_file("/w/build/command.log"), "building\n");
}

TEST(CompileCommandBackend, DifferingEntriesNamesChangedAddedAndRemovedFiles) {
  auto zip = [](std::vector<std::pair<std::string, std::string>> files) {
    // A tiny stored zip written by the system's python, so the test does not depend on wheel::pack.
    fs::path dir = fs::temp_directory_path() / ("opforge-diffzip-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::string script = "import zipfile,sys\nz=zipfile.ZipFile(sys.argv[1],'w')\n";
    for (auto& [n, c] : files) script += "z.writestr('" + n + "', '" + c + "')\n";
    script += "z.close()\n";
    std::ofstream(dir / "mk.py") << script;
    std::string cmd = "python3 '" + (dir / "mk.py").string() + "' '" + (dir / "w.zip").string() + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    std::string bytes = slurp(dir / "w.zip");
    fs::remove_all(dir);
    return bytes;
  };
  std::string a = zip({{"p/a.py", "1"}, {"p/b.so", "x"}, {"p/gone.py", "g"}});
  std::string b = zip({{"p/a.py", "1"}, {"p/b.so", "y"}, {"p/new.py", "n"}});
  auto d = differing_entries(a, b);
  ASSERT_TRUE(d) << d.error().render();
  EXPECT_EQ(*d, (std::vector<std::string>{"p/b.so", "p/gone.py", "p/new.py"}));
  auto same = differing_entries(a, a);
  ASSERT_TRUE(same);
  EXPECT_TRUE(same->empty());
}

// An sdist without its CUDA sources (captured): the error block leads with ninja's line, which the
// traceback after it would push out of the tail, and the traceback's frames are shortened.
TEST(CompileCommandBackend, FailureLeadsWithTheLineThatSaysWhy) {
  probe::FakeMachine fake;
  fake.env.set("PATH", "/usr/bin");
  fake.env.set("OPFORGE_CACHE_DIR", "/cache");
  fake.fs.add_file("/src/setup.py", "");
  auto p = base_plan("/src", "/w");
  p.recipe.build.command = {"python3", "setup.py", "bdist_wheel"};
  std::ifstream in(std::string(OPFORGE_SOURCE_DIR) + "/tests/data/build_logs/setuptools_ninja_missing_source.log");
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fake.proc.on({"python3"}, probe::ProcessResult{.exit_code = 1, .out = log});
  auto r = compile::run_command_backend(fake.machine(), p, {.wheel_dir = p.dist_dir});
  ASSERT_FALSE(r);
  ASSERT_EQ(fake.proc.calls().size(), 1u);
  const std::string tree = fake.proc.calls()[0].cwd.string();
  EXPECT_EQ(r.error().message,
            "the build command failed (exit 1) in " + tree +
                ": ninja: error: '/build/causal_conv1d-1.5.2/csrc/causal_conv1d.cpp', needed by "
                "'/build/causal_conv1d-1.5.2/build/temp.linux-x86_64-cpython-312/csrc/causal_conv1d.o', missing and "
                "no known rule to make it\n"
                "its last lines:\n"
                "reading manifest template 'MANIFEST.in'\n"
                "warning: no files found matching '*.cu' under directory 'csrc'\n"
                "writing manifest file 'causal_conv1d.egg-info/SOURCES.txt'\n"
                "running build_ext\n"
                "/opt/venv/lib/python3.12/site-packages/torch/utils/cpp_extension.py:480: UserWarning: There are no "
                "g++ version bounds defined for CUDA version 13.0\n"
                "  warnings.warn(f'There are no {compiler_name} version bounds defined for CUDA version "
                "{cuda_str_version}')\n"
                "building 'causal_conv1d_cuda' extension\n"
                "creating /build/causal_conv1d-1.5.2/build/temp.linux-x86_64-cpython-312/csrc\n"
                "Emitting ninja build file /build/causal_conv1d-1.5.2/build/temp.linux-x86_64-cpython-312/"
                "build.ninja...\n"
                "Compiling objects...\n"
                "Allowing ninja to set a default number of workers... (overridable by setting the environment "
                "variable MAX_JOBS=N)\n"
                "ninja: error: '/build/causal_conv1d-1.5.2/csrc/causal_conv1d.cpp', needed by "
                "'/build/causal_conv1d-1.5.2/build/temp.linux-x86_64-cpython-312/csrc/causal_conv1d.o', missing and "
                "no known rule to make it\n"
                "Traceback (most recent call last):\n"
                "  [1 frame left out]\n"
                "  File \"/usr/lib/python3.12/subprocess.py\", line 573, in run\n"
                "    raise CalledProcessError(retcode, process.args,\n"
                "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.\n"
                "\n"
                "The above exception was the direct cause of the following exception:\n"
                "\n"
                "Traceback (most recent call last):\n"
                "  [25 frames left out]\n"
                "  File \"/opt/venv/lib/python3.12/site-packages/torch/utils/cpp_extension.py\", line 2522, in "
                "_run_ninja_build\n"
                "    raise RuntimeError(message) from e\n"
                "RuntimeError: Error compiling objects for extension");
  EXPECT_EQ(r.error().hint, "full log: /w/build/command.log");
}

TEST(CompileCommandBackend, FailureStopsWithTheLogTail) {
  fs::path work = fs::temp_directory_path() / ("opforge-cmdfail-" + std::to_string(::getpid()));
  fs::remove_all(work);
  fs::create_directories(work / "src");
  auto p = base_plan(work / "src", work);
  p.recipe.build.command = {"/bin/sh", "-c", "echo compiling; echo 'error: boom' >&2; exit 3"};
  std::vector<std::string> lines;
  probe::OverlayMachine cached(probe::real_machine(), {{"OPFORGE_CACHE_DIR", (work / "cache").string()}});
  auto r = compile::run_command_backend(
      cached.machine(), p, {.wheel_dir = p.dist_dir, .on_line = [&](std::string_view l) { lines.emplace_back(l); }});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::failed);
  EXPECT_NE(r.error().message.find("exit 3"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("error: boom"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().hint.find("command.log"), std::string::npos);
  EXPECT_NE(slurp(work / "build" / "command.log").find("compiling"), std::string::npos);
  EXPECT_FALSE(lines.empty());
  fs::remove_all(work);
}

// Real setuptools project with a C extension and an nvcc-built CUDA library, built in two folders.
TEST(CompileCommandBackend, SetuptoolsProjectGetsTheVariablesAndRebuildsByteForByte) {
  const fs::path nvcc = "/usr/local/cuda-13.0/bin/nvcc";
  if (!fs::exists(nvcc)) GTEST_SKIP() << "nvcc is not available at " << nvcc;
  if (std::system("/usr/bin/python3 -c 'import setuptools, wheel' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 lacks setuptools or wheel";
  fs::path top = fs::temp_directory_path() / ("opforge-cmdbuild-" + std::to_string(::getpid()));
  fs::remove_all(top);
  std::vector<fs::path> wheels;
  for (const char* node : {"a", "bb/deeper"}) {
    fs::path src = top / node / "project";
    fs::create_directories(src.parent_path());
    fs::copy(fs::path(OPFORGE_TEST_FIXTURES) / "setuptools_project", src, fs::copy_options::recursive);
    auto p = base_plan(src, top / node);
    p.recipe.build.command = {"/usr/bin/python3", "setup.py", "-q", "bdist_wheel"};
    p.wheel_version = "0.3.0+cu13.gabc1234";
    p.exports = {{"CUDA_HOME", "/usr/local/cuda-13.0"},
                 {"PATH", "/usr/local/cuda-13.0/bin:/usr/bin:/bin"},
                 {"TORCH_CUDA_ARCH_LIST", "8.0"},
                 {"DS_BUILD_OPS", "0"},
                 {"DS_BUILD_DEMO_CUDA", "1"}};
    probe::OverlayMachine cached(probe::real_machine(), {{"OPFORGE_CACHE_DIR", (top / "cache").string()}});
    auto r = compile::run_command_backend(cached.machine(), p, {.wheel_dir = p.dist_dir});
    ASSERT_TRUE(r) << r.error().render();
    EXPECT_EQ(r->wheel.filename().string().rfind("demo_ops-0.3.0+cu13.gabc1234-", 0), 0u) << r->wheel;
    wheels.push_back(r->wheel);
  }
  EXPECT_EQ(wheels[0].filename(), wheels[1].filename());
  std::string a = slurp(wheels[0]), b = slurp(wheels[1]);
  auto ea = wheel::read_archive(a);
  auto eb = wheel::read_archive(b);
  ASSERT_TRUE(ea && eb);
  std::map<std::string, std::string> ma, mb;
  for (auto& e : *ea) ma[e.path] = e.content;
  for (auto& e : *eb) mb[e.path] = e.content;
  ASSERT_TRUE(ma.contains("demo_ops/_build_env.py"));
  const std::string& build_env = ma["demo_ops/_build_env.py"];
  EXPECT_NE(build_env.find("TORCH_CUDA_ARCH_LIST = '8.0'"), std::string::npos) << build_env;
  EXPECT_NE(build_env.find("'DS_BUILD_DEMO_CUDA': '1'"), std::string::npos) << build_env;
  EXPECT_NE(build_env.find("SOURCE_DATE_EPOCH = '1700000000'"), std::string::npos) << build_env;
  ASSERT_TRUE(ma.contains("demo_ops-0.3.0+cu13.gabc1234.dist-info/METADATA"));
  EXPECT_NE(ma["demo_ops-0.3.0+cu13.gabc1234.dist-info/METADATA"].find("Version: 0.3.0+cu13.gabc1234"),
            std::string::npos);
  bool has_cuda = false;
  for (auto& [path, _] : ma) has_cuda |= path.find("libdemo_cuda") != std::string::npos;
  EXPECT_TRUE(has_cuda);
  auto differing = differing_entries(a, b);
  ASSERT_TRUE(differing) << differing.error().render();
  std::string names;
  for (const auto& n : *differing) names += " " + n;
  EXPECT_EQ(names, "") << "files differing between the two builds:" << names;
  EXPECT_TRUE(a == b) << "the two wheels differ in bytes";
  auto report = wheel::verify_bytes(wheels[0].filename().string(), a);
  EXPECT_TRUE(report.ok()) << (report.problems.empty() ? "" : report.problems.front());
  fs::remove_all(top);
}

// The toolkit as a command's project sees it: CUDA_HOME and PATH name a folder of links whose
// bin/nvcc is the wrapper (torch's setuptools path starts $CUDA_HOME/bin/nvcc itself); the host
// compiles map the view's paths back to the toolkit's.
TEST(CompileCommandBackend, TheToolkitViewsNvccIsTheWrapper) {
  const fs::path top = test_util::temp_dir("toolkit-view");
  const fs::path real = top / "cuda-13.0";
  fs::create_directories(real / "bin");
  fs::create_directories(real / "include");
  test_util::spit(real / "bin/nvcc", "#!/bin/sh\n");
  test_util::spit(real / "bin/ptxas", "");
  test_util::spit(real / "version.json", "{}");
  auto m = probe::real_machine();
  const fs::path wrapper = top / "cache/nvcc/0123/nvcc";
  auto view = compile::toolkit_view(m.fs, top / "cache", real, wrapper);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->root.parent_path(), top / "cache/toolkit-view");
  using Links = std::vector<std::pair<std::string, fs::path>>;
  EXPECT_EQ(view->links, (Links{{"bin/nvcc", wrapper},
                                {"bin/ptxas", real / "bin/ptxas"},
                                {"bin/rule.json", wrapper.parent_path() / "rule.json"},
                                {"include", real / "include"},
                                {"version.json", real / "version.json"}}));
  ASSERT_TRUE(compile::write_toolkit_view(m.fs, *view));
  ASSERT_TRUE(compile::write_toolkit_view(m.fs, *view));  // there already: kept
  EXPECT_EQ(fs::read_symlink(view->root / "bin/nvcc"), wrapper);
  EXPECT_EQ(fs::read_symlink(view->root / "include"), real / "include");
  std::size_t entries = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(view->root.parent_path())) ++entries;
  EXPECT_EQ(entries, 1u);  // no temporary folder left beside it
  // Another entry in the toolkit: another view.
  test_util::spit(real / "bin/cuobjdump", "");
  EXPECT_NE(compile::toolkit_view(m.fs, top / "cache", real, wrapper)->root, view->root);
  // A toolkit without bin/nvcc (a distribution's split layout): no view.
  EXPECT_FALSE(compile::toolkit_view(m.fs, top / "cache", top / "nothing", wrapper));

  plan::Plan p = base_plan("/src", "/w");
  cuda::Toolkit tk;
  tk.root = real;
  tk.nvcc = real / "bin/nvcc";
  p.cuda.chosen = tk;
  p.exports = {{"CUDA_HOME", real.string()}, {"PATH", (real / "bin").string() + ":/usr/bin"}};
  auto env = compile::command_environment({}, p, "/t", wrapper, nullptr, view->root);
  EXPECT_EQ(env["CUDA_HOME"], view->root.string());
  EXPECT_EQ(env["PATH"], (view->root / "bin").string() + ":/usr/bin");
  const std::string map = "-ffile-prefix-map=" + view->root.string() + "=" + real.string();
  EXPECT_TRUE(env["CFLAGS"].ends_with(" " + map)) << env["CFLAGS"];
  EXPECT_TRUE(env["NVCC_APPEND_FLAGS"].ends_with(" -Xcompiler=" + map)) << env["NVCC_APPEND_FLAGS"];
  EXPECT_EQ(env["PYTORCH_NVCC"], wrapper.string());
  fs::remove_all(top);
}
