#include "compile/wrap/environment.h"

#include <algorithm>

#include "compile/compiler_cache/compiler_cache.h"
#include "compile/compiler_cache/launcher.h"
#include "compile/pch/pch.h"
#include "compiler/host.h"
#include "settings/settings.h"
#include "target/arch.h"
#include "util/strings.h"

namespace opforge::compile {

namespace fs = std::filesystem;

namespace {

/// CC, CXX and nvcc's -ccbin: the plan's compilers (compiler::invocation), behind the -g0 scripts
/// when `host` is given (their folder then also goes first on PATH).
void set_compilers(settings::ChildEnv& env, const plan::Plan& plan, const HostWrappers* host) {
  if (!plan.host) return;
  auto via = compiler::invocation(*plan.host);
  if (host) {
    via.cc = host->cc;
    via.cxx = host->cxx;
    // With a launcher in the wrappers (sccache), nvcc runs the real compiler: the launcher runs
    // nvcc's own steps already (the nvcc wrapper names the same compiler last, for a project's -ccbin $CC).
    if (wrapper_launcher(plan).empty()) via.ccbin = host->dir;
    env.prepend_path("PATH", host->dir.string());
  }
  if ((host || !plan.exports.contains("CC")) && !via.cc.empty()) env.set("CC", via.cc.string());
  if ((host || !plan.exports.contains("CXX")) && !via.cxx.empty()) env.set("CXX", via.cxx.string());
  if (!via.ccbin.empty() && !plan.exports.contains("NVCC_PREPEND_FLAGS")) {
    std::string flags = "-ccbin " + via.ccbin.string();
    if (plan.host->allow_unsupported) flags += " -allow-unsupported-compiler";
    env.append_flags("NVCC_PREPEND_FLAGS", flags);
  }
}

/// The flags that keep the build folder and run out of the output.
void add_reproducibility_flags(settings::ChildEnv& env, const plan::Plan& plan, const fs::path& tree) {
  // One fixed seed for every file is enough: it only replaces the per-run random names gcc gives
  // to anonymous-namespace symbols.
  const std::string map = "-ffile-prefix-map=" + tree.string() + "=.";
  const std::string seed = "-frandom-seed=opforge";
  // setuptools uses CFLAGS/CXXFLAGS from the environment *instead of* Python's own: keep those first.
  const std::string python_cflags =
      plan.cuda.torch ? std::string(strings::trim(plan.cuda.torch->python_cflags)) : std::string();
  for (const char* var : {"CFLAGS", "CXXFLAGS"}) {
    const std::string user = env.value(var);
    env.set(var, python_cflags);
    if (!user.empty()) env.append_flags(var, user);
    env.append_flags(var, map + " " + seed);
  }
  env.append_flags("LDFLAGS", "-Wl,--build-id=none");
  env.append_flags("NVCC_APPEND_FLAGS", "-Xcompiler=" + map + " -Xcompiler=" + seed);
  // Only a plan of a git source not fetched yet describes an environment without the time (the
  // build fetches first): a placeholder, as for the tree's folder.
  env.set("SOURCE_DATE_EPOCH", plan.epoch_at_fetch ? "<commit time>" : std::to_string(plan.source_date_epoch));
  env.set("PYTHONHASHSEED", "0");
}

/// A cross-build of the command: setup.py runs with this machine's Python configured as the
/// target's (Python reads _PYTHON_SYSCONFIGDATA_NAME's module for EXT_SUFFIX and the compilers'
/// defaults; setuptools and wheel take the platform tag from _PYTHON_HOST_PLATFORM, as crossenv
/// and cibuildwheel's cross modes do), and the target's pyconfig.h found after the cross
/// compiler's own folders. The compilers are the plan's (set_compilers); the wrappers put the
/// target's torch and runtime in place of this machine's (cross_rewrites).
void set_cross(settings::ChildEnv& env, const plan::Plan& plan) {
  if (!plan.cross_command) return;
  env.set("_PYTHON_SYSCONFIGDATA_NAME", plan.cross_command->sysconfig);
  env.set("_PYTHON_HOST_PLATFORM", plan.cross_command->host_platform);
  if (!plan.cross_nvcc_includes.empty())
    env.append_flags("NVCC_APPEND_FLAGS", strings::join(plan.cross_nvcc_includes, " "));
  if (plan.python_arch_include.empty()) return;
  const std::string dir = plan.python_arch_include.string();
  for (const char* var : {"CFLAGS", "CXXFLAGS"}) env.append_flags(var, "-idirafter " + dir);
  env.append_flags("NVCC_APPEND_FLAGS", "-Xcompiler=-idirafter," + dir);
}

/// The plan's compiler cache (--cache, else [build] cache): torch's BuildExtension puts ccache in
/// front of the host compiler and nvcc when ccache is on PATH and TORCH_NO_COMPILER_WRAPPER is unset.
void set_compiler_cache(settings::ChildEnv& env, const plan::Plan& plan, const fs::path& tree) {
  if (plan.cache != recipe::Cache::ccache) {
    env.set("TORCH_NO_COMPILER_WRAPPER", "1");  // every compile runs for real
    // ...and a project's own ccache launcher does not serve it from the caller's cache either:
    // ggml's CMake (GGML_CCACHE, on by default) puts ccache in front of every compile when it is on
    // PATH, so a rebuild "without a cache" was ccache hits from an earlier build.
    env.set_default("CCACHE_DISABLE", "1");
    return;
  }
  // The scratch tree's path is the same for the same content, so hits need no base_dir trick.
  // Depend mode: a miss then costs the compile alone, ccache reading the headers from the
  // compiler's -MMD file instead of running the preprocessor first (about 4% of a torch
  // extension's compile here; nvcc, which ccache cannot use it for, keeps the preprocessor mode).
  env.erase("TORCH_NO_COMPILER_WRAPPER");
  env.layer(
      ccache_environment({.base_dir = tree, .remote = plan.recipe.build.remote, .stats_log = {}, .depend_mode = true}));
}

/// What reaches a CMake the project runs (directly, from setup.py, or through scikit-build-core):
/// CMake finds nvcc and an arch list on its own otherwise. Toolkit: CUDACXX (the nvcc wrapper, so
/// its arch rewrite applies; the toolkit's nvcc without one), CUDAToolkit_ROOT, CUDAHOSTCXX (the
/// C++ compiler CXX names: CMake's CMAKE_CUDA_HOST_COMPILER, whose -ccbin nvcc takes over
/// NVCC_PREPEND_FLAGS' with a warning), then the arch list where arch_channels says. CMAKE_ARGS is
/// appended to (a later -D wins, and the caller's other arguments stay); SKBUILD_CMAKE_DEFINE is
/// left alone, since scikit-build-core splits it on every ';', list values included. Always:
/// CMAKE_BUILD_PARALLEL_LEVEL = the plan's jobs, and scikit-build-core's build folder inside the
/// tree (SKBUILD_BUILD_DIR, unless the caller set one): its default is a new temporary folder each
/// time, whose path the objects and ccache's keys would hold. With ccache:
/// CMAKE_{C,CXX,CUDA}_COMPILER_LAUNCHER = ccache (sccache needs none: the wrappers CC, CXX and
/// CUDACXX name run it already).
void set_cmake(settings::ChildEnv& env, const plan::Plan& plan, const fs::path& nvcc_wrapper, const fs::path& tree) {
  env.set("CMAKE_BUILD_PARALLEL_LEVEL", std::to_string(std::max(1u, plan.jobs)));
  // A library linked against another of the build tree gets the build folder in its RPATH, which
  // CMake's install rewrites in place (to the INSTALL_RPATH): the string table keeps the build
  // folder's length, so two folders gave different bytes (llama.cpp's libllama-common). Relative
  // to $ORIGIN the build RPATH is the same in every folder. First, so that the caller's -D wins.
  const std::string own = env.value("CMAKE_ARGS");
  env.set("CMAKE_ARGS", std::string(kBuildRpathUseOrigin) + (own.empty() ? "" : " " + own));
  env.set_default("SKBUILD_BUILD_DIR", (tree / kSkbuildBuildDir).string());
  if (plan.cache == recipe::Cache::ccache)
    for (const char* var : {"CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER", "CMAKE_CUDA_COMPILER_LAUNCHER"})
      env.set(var, "ccache");
  if (!plan.cuda.chosen) return;
  env.set("CUDACXX", (nvcc_wrapper.empty() ? plan.cuda.chosen->nvcc : nvcc_wrapper).string());
  env.set("CUDAToolkit_ROOT", plan.cuda.chosen->root.string());
  if (const std::string cxx = env.value("CXX"); !cxx.empty()) env.set("CUDAHOSTCXX", cxx);
  for (const auto& c : arch_channels(plan)) {
    if (c.variable == "TORCH_CUDA_ARCH_LIST") continue;  // plan.exports has it already
    if (c.variable == "CMAKE_ARGS") env.append_flags("CMAKE_ARGS", c.value);
    else env.set(c.variable, c.value);
  }
}

/// The toolkit's own folder replaced by the view where the environment names it (toolkit_view.h).
void use_toolkit_view(settings::ChildEnv& env, const plan::Plan& plan, const fs::path& view) {
  const fs::path real = plan.cuda.chosen->root;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (env.has(var) && fs::path(env.value(var)).lexically_normal() == real.lexically_normal())
      env.set(var, view.string());
  if (env.has("PATH")) {
    std::vector<std::string> parts;
    for (auto& p : strings::split(env.value("PATH"), ':'))
      parts.push_back(fs::path(p).lexically_normal() == (real / "bin").lexically_normal() ? (view / "bin").string()
                                                                                          : std::string(p));
    env.set("PATH", strings::join(parts, ":"));
  }
  // torch puts $CUDA_HOME/include on every compile's command line: the host compiler's file names
  // read the toolkit's folder, as before the view.
  const std::string map = "-ffile-prefix-map=" + view.string() + "=" + real.string();
  for (const char* var : {"CFLAGS", "CXXFLAGS"}) env.append_flags(var, map);
  env.append_flags("NVCC_APPEND_FLAGS", "-Xcompiler=" + map);
}

}  // namespace

std::vector<ArchChannel> arch_channels(const plan::Plan& plan) {
  std::vector<ArchChannel> out;
  if (!plan.cuda.chosen || plan.arch.arches.empty()) return out;
  const auto& arches = plan.arch.arches;
  out.push_back({"TORCH_CUDA_ARCH_LIST", target::arch_list_str(arches), "PyTorch's cpp_extension, and setup.py files"});
  const std::string cmake = target::cmake_architectures(arches);
  out.push_back({"CUDAARCHS", cmake, "CMake: CMAKE_CUDA_ARCHITECTURES' default at a build folder's first configure"});
  if (plan.recipe.arch.enforce)
    out.push_back({"CMAKE_ARGS", "-DCMAKE_CUDA_ARCHITECTURES=" + cmake,
                   "scikit-build-core and setup.py CMake drivers: beats a CMakeLists.txt's default ([arch] enforce)"});
  for (const auto& [name, form] : plan.recipe.arch.env)
    if (const auto* f = target::find_arch_form(form))
      out.push_back({name, f->spell(arches), "the project ([arch] env, form " + form + ")"});
  for (const auto& [name, form] : plan.recipe.arch.cmake_define)
    if (const auto* f = target::find_arch_form(form))
      out.push_back({"CMAKE_ARGS", "-D" + name + "=" + f->spell(arches),
                     "the project's CMake ([arch] cmake_define, form " + form + ")"});
  return out;
}

std::map<std::string, std::string> command_environment(const std::map<std::string, std::string>& base,
                                                       const plan::Plan& plan, const fs::path& tree_in,
                                                       const fs::path& nvcc_wrapper, const HostWrappers* host,
                                                       const fs::path& toolkit_view) {
  const fs::path tree = tree_in.empty() ? plan.source.root : tree_in;
  // The plan's exports (MAX_JOBS among them), then the project's own switches ([build.env]): the
  // recipe's word over the caller's environment.
  settings::ChildEnv env(base);
  env.layer(plan.exports).layer(plan.recipe.build.env);
  set_compilers(env, plan, host);
  add_reproducibility_flags(env, plan, tree);
  set_cross(env, plan);
  if (!toolkit_view.empty() && plan.cuda.chosen) use_toolkit_view(env, plan, toolkit_view);
  const bool ccache = plan.cache == recipe::Cache::ccache;
  if (plan.cuda.chosen && !nvcc_wrapper.empty())
    env.set_default("PYTORCH_NVCC", (ccache ? "ccache " : "") + nvcc_wrapper.string());
  // The plan's exports hold MAX_JOBS already; a plan made without them (a test's) still gets one.
  env.set_default("MAX_JOBS", std::to_string(std::max(1u, plan.jobs)));
  set_cmake(env, plan, nvcc_wrapper, tree);
  set_compiler_cache(env, plan, tree);
  if (plan.pch && host) {
    env.set(std::string(pch::kTreeVariable), tree.string());
    env.set(std::string(pch::kLogVariable), (plan.build_dir / "pch.log").string());
  }
  return std::move(env).vars();
}

std::map<std::string, std::string> command_exports(const std::map<std::string, std::string>& base,
                                                   const plan::Plan& plan, const fs::path& tree,
                                                   const fs::path& nvcc_wrapper, const HostWrappers* host) {
  std::map<std::string, std::string> out;
  for (auto& [k, v] : command_environment(base, plan, tree, nvcc_wrapper, host)) {
    auto it = base.find(k);
    if (it == base.end() || it->second != v || plan.exports.contains(k)) out[k] = v;
  }
  return out;
}

std::map<std::string, std::string> planned_exports(probe::Machine m, const plan::Plan& plan, const fs::path& tree) {
  auto nvcc = default_nvcc_wrapper(m, plan);
  auto host = default_host_wrappers(m, plan);
  const settings::ChildEnv base(m.env, settings::Child::command);
  settings::ChildEnv out(
      command_exports(base.vars(), plan, tree, nvcc ? nvcc->path : fs::path(), host ? &*host : nullptr));
  // What the build adds to watch the project (run_command_backend), as `plan` should show it.
  if (const fs::path cache_dir = settings::cache_dir(m.env); recipe::project_build(plan.recipe) && !cache_dir.empty()) {
    if (base.has("PYTHONPATH")) out.set_default("PYTHONPATH", base.value("PYTHONPATH"));
    add_watch_environment(out, network_watch(cache_dir), nvcc ? plan.build_dir / "nvcc-arch.log" : fs::path());
  }
  return std::move(out).vars();
}

Status write_planned_wrappers(probe::Machine m, const plan::Plan& plan) {
  if (auto nvcc = default_nvcc_wrapper(m, plan)) OPFORGE_CHECK(write_nvcc_wrapper(m.fs, *nvcc));
  if (auto host = default_host_wrappers(m, plan)) OPFORGE_CHECK(write_host_wrappers(m.fs, *host));
  if (const auto program = wrapper_launcher(plan); !program.empty() && !settings::cache_dir(m.env).empty())
    OPFORGE_CHECK(write_compile_launcher(m.fs, compile_launcher(settings::cache_dir(m.env), program)));
  if (const fs::path cache_dir = settings::cache_dir(m.env); recipe::project_build(plan.recipe) && !cache_dir.empty())
    OPFORGE_CHECK(write_network_watch(m.fs, network_watch(cache_dir)));
  return {};
}

}  // namespace opforge::compile
