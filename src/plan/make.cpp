/// plan::make: the orchestration of the stages (stages.h) that resolve a recipe into a plan, in
/// order; the recipe and the source tree's placement are read here.
#include <algorithm>
#include <chrono>

#include "plan/stages.h"
#include "probe/overlay_environment.h"
#include "settings/child_env.h"
#include "settings/settings.h"

namespace opforge::plan {
namespace {

/// The recipe, with --release / --release-of applied as if it said so.
Result<recipe::Recipe> load_recipe(probe::Machine m, const fs::path& recipe_file, const Options& opts) {
  recipe::Recipe r = OPFORGE_TRY(recipe::load(m, recipe_file));
  if (opts.release) r.build.release = true;
  if (opts.release_commit) {
    r.build.release = true;
    r.build.release_commit = opts.release_commit;
  }
  return r;
}

/// The source tree and its ops folder, the build and dist folders, the project's Python.
Status place_source(probe::Machine m, const Options& opts, Plan& plan) {
  const recipe::Recipe& r = plan.recipe;
  plan.build_dir = opts.build_dir.value_or((r.dir / r.build.build_dir).lexically_normal());
  plan.dist_dir = opts.dist_dir.value_or((r.dir / r.build.dist_dir).lexically_normal());
  if (opts.inspect_source) {
    // opforge's own outputs inside the tree (the documented set-up: a recipe at the top of a git
    // checkout, build/ and dist/ beside it) must not make the next build's wheel "dirty".
    std::vector<fs::path> own{m.fs.absolute(plan.build_dir), m.fs.absolute(plan.dist_dir)};
    if (auto cache = cache_dir(m, opts); !cache.empty()) own.push_back(m.fs.absolute(cache));
    plan.source = OPFORGE_TRY(opts.inspect_source(m, r, own));
  } else {
    if (!r.source.path)
      return unsatisfied("[source] git needs the source stage, which is not part of this build",
                         "use [source] path = \"...\" with a checked-out tree");
    plan.source.root = *r.source.path;
  }
  if (plan.source.ops_dir.empty() && plan.source.not_fetched.empty())
    plan.source.ops_dir = (plan.source.root / r.source.ops_dir).lexically_normal();
  plan.python = opts.python.value_or(r.cuda.python);
  plan.cache = opts.cache.value_or(r.build.cache);
  return {};
}

/// Precompiled torch headers (compile/pch/pch.h): on for a command build with torch and gcc, where a
/// host compile that includes torch/extension.h can start from one.
void decide_pch(const Options& opts, Plan& plan) {
  const bool command = recipe::project_build(plan.recipe);
  if (!plan.recipe.build.pch || opts.no_pch)
    plan.pch_why = opts.no_pch ? "off (--no-pch)" : "off ([build] pch = false)";
  else if (!command) plan.pch_why = "off: a native build (opforge's ops compile without torch's headers)";
  else if (!plan.cuda.torch || !plan.cuda.torch->torch_version) plan.pch_why = "off: no torch in the project's Python";
  else if (!plan.host) plan.pch_why = "off: no host compiler chosen (no CUDA toolkit)";
  else if (plan.host->compiler.family != compiler::Family::gcc)
    plan.pch_why = "off: the host compiler is clang (gcc's .gch only)";
  else if (plan.cache == recipe::Cache::sccache)
    plan.pch_why = "off: with sccache (it preprocesses every compile in full and sends it whole to build servers)";
  else {
    plan.pch = true;
    plan.pch_why =
        "on: " + std::string("torch/extension.h") +
        " precompiled once per compiler, flags, torch and what a file reads before it (in the cache's pch/), for "
        "each C++ compile that "
        "includes it";
  }
  if (command) plan.notes.push_back("precompiled torch header: " + plan.pch_why);
}

/// gcc's garbage-collection threshold for a command build's host compiles ([build] gcc_gc_heap_mib).
void decide_gcc_gc(Plan& plan) {
  if (!recipe::project_build(plan.recipe) || !plan.host) return;
  const unsigned mib = plan.recipe.build.gcc_gc_heap_mib;
  if (plan.host->compiler.family != compiler::Family::gcc)
    plan.gcc_gc_why = "gcc's default: the host compiler is clang";
  else if (mib == 0) plan.gcc_gc_why = "gcc's default ([build] gcc_gc_heap_mib = 0)";
  else {
    plan.gcc_gc_heap_kib = std::uint64_t{mib} * 1024;
    plan.gcc_gc_why = "collects once its heap passes " + std::to_string(mib) +
                      " MiB (--param=ggc-min-heapsize=" + std::to_string(plan.gcc_gc_heap_kib) +
                      " on every host compile: less CPU, the same objects)";
  }
  plan.notes.push_back("gcc: " + plan.gcc_gc_why);
}

/// A command build of a CUDA project whose build files read a switch that turns its CUDA on, and
/// that neither the caller nor [build.env] sets: without a GPU such projects build CPU-only, and the
/// build would then be refused (pipeline/gpu_code_check.cpp). Said before the build starts.
void warn_unset_cuda_switches(probe::Machine m, Plan& plan) {
  if (plan.arch.arches.empty() || plan.project_files.cuda_sources == 0 ||
      plan.source.catalogue == Catalogue::op_builder)
    return;
  const auto& build_env = plan.recipe.build.env;
  // What the project's command sees of the caller's environment.
  const settings::ChildEnv caller(m.env, settings::Child::command);
  const std::string cmake_args =
      build_env.contains("CMAKE_ARGS") ? build_env.at("CMAKE_ARGS") : caller.value("CMAKE_ARGS");
  for (const auto& s : plan.project_files.switches) {
    if (s.turns_off) continue;
    const bool set = s.cmake_option ? cmake_args.find("-D" + s.name) != std::string::npos
                                    : build_env.contains(s.name) || caller.has(s.name);
    if (set) continue;
    const std::string fix =
        s.cmake_option ? "[build.env] CMAKE_ARGS = \"-D" + s.name + "=ON\"" : "[build.env] " + s.name + " = \"1\"";
    plan.warnings.push_back("the project reads " + s.name + " (" + s.file + ":" + std::to_string(s.line) +
                            ") and this build does not set it: projects like this may compile no CUDA code without " +
                            "it when no GPU is visible, and a wheel without the plan's " + plan.arch.str() +
                            " is refused; set " + fix + " (or [arch] list = \"none\" for a wheel without GPU code)");
  }
}

}  // namespace

fs::path cache_dir(probe::Machine m, const Options&) { return settings::cache_dir(m.env); }

Result<Plan> make(probe::Machine machine, const fs::path& recipe_file, const Options& opts) {
  // Every child (DeepSpeed's compatibility probe, the build) sees the node reports' list (or the
  // [matrix] arch cell's) as TORCH_CUDA_ARCH_LIST; the arch resolver is handed it (read_overrides).
  std::map<std::string, std::string> overlay;
  if (opts.node_arch_list) overlay["TORCH_CUDA_ARCH_LIST"] = *opts.node_arch_list;
  if (opts.cell_arch_list) overlay["TORCH_CUDA_ARCH_LIST"] = *opts.cell_arch_list;
  probe::OverlayMachine seen(machine, std::move(overlay));
  const probe::Machine m = seen.machine();
  Plan plan;
  plan.recipe = OPFORGE_TRY(load_recipe(m, recipe_file, opts));
  const Overrides overrides = OPFORGE_TRY(read_overrides(m.env, plan.recipe, opts, plan.notes));
  OPFORGE_CHECK(probe::check_cache_dir(m.fs, m.env));
  plan.compile_timeout = OPFORGE_TRY(settings::compile_timeout(m.env, plan.compile_timeout));
  OPFORGE_CHECK(place_source(m, opts, plan));
  const bool command = recipe::project_build(plan.recipe);
  if (command && !plan.source.root.empty()) plan.project_files = project::read_build_files(m.fs, plan.source.root);
  OPFORGE_CHECK(choose_platform(opts, plan));
  OpCatalogue catalogue = OPFORGE_TRY(load_catalogue(m, plan.recipe, plan.source, plan.python, command, plan.notes));
  // Each op as the target machine builds it: its [machine.<name>] sources and flags merged in.
  for (auto& op : catalogue.manifests) op = ops::for_platform(op, plan.platform->name);
  Toolchain chain = OPFORGE_TRY(resolve_toolkit(m, opts, plan));
  if (plan.cross()) OPFORGE_CHECK(resolve_cross_host(m, plan, chain));
  if (chain.tk) {
    if (!plan.cross()) OPFORGE_CHECK(resolve_host(m, opts, plan, chain));
    OPFORGE_CHECK(resolve_arch(m, opts, overrides, plan, chain));
  }
  OPFORGE_CHECK(pin_cpu_target(m, opts, plan));
  if (!plan.cross()) OPFORGE_CHECK(named_host_for_cpu_code(m, plan, chain));
  warn_unset_cuda_switches(m, plan);
  const Env toolkit = OPFORGE_TRY(toolkit_exports(m, opts, plan, chain));
  plan.ops = OPFORGE_TRY(decide_ops(m, opts, plan, catalogue, chain, toolkit));
  OPFORGE_CHECK(provision_cross_runtime(m, opts, plan, chain));
  OPFORGE_CHECK(find_python_include(m, plan));
  OPFORGE_CHECK(resolve_cross_command(m, opts, plan));
  const bool any_cuda = carries_cuda(plan, chain);
  decide_pch(opts, plan);
  decide_gcc_gc(plan);
  plan.jobs = choose_jobs(m, plan.recipe, opts, overrides.max_jobs, plan.ops, plan.notes, plan.jobs_reason, plan.pch);
  plan.jobs_auto = !opts.jobs && !overrides.max_jobs && !plan.recipe.build.jobs;
  if (const auto n = std::count_if(plan.ops.begin(), plan.ops.end(), [](const auto& d) { return d.builds(); });
      command && plan.source.catalogue == Catalogue::op_builder && n > 1 && plan.jobs > 1 &&
      std::any_of(plan.recipe.build.command.begin(), plan.recipe.build.command.end(),
                  [](const std::string& a) { return fs::path(a).filename() == "setup.py"; }))
    plan.notes.push_back("op compiles: one setup.py build_ext per op, up to " + std::to_string(plan.jobs) +
                         " at once, costliest first, their MAX_JOBS adding up to " + std::to_string(plan.jobs) +
                         " (setup.py alone compiles op after op)");
  plan.source_date_epoch = choose_epoch(overrides.epoch, plan.source, plan.notes);
  plan.epoch_at_fetch = !overrides.epoch && !plan.source.not_fetched.empty();
  const auto torch_version = plan.cuda.torch ? plan.cuda.torch->torch_version : std::nullopt;
  plan.wheel_version =
      OPFORGE_TRY(wheel_version(plan.recipe, any_cuda ? chain.tk : nullptr, plan.source, torch_version));
  if (opts.pin_torch && torch_version)
    if (auto v = parse_version(torch_version->substr(0, torch_version->find('+')))) {
      plan.requires_dist.push_back("torch==" + v->str() + ".*");
      plan.notes.push_back("requires: torch==" + v->str() + ".* (the torch this wheel is built against)");
    }
  if (command && plan.recipe.wheel.torch_pin && torch_version)
    if (auto pin = torch_pin(*torch_version); !pin.empty())
      plan.notes.push_back("requires: torch as the wheel's libraries link it, read after the build: " +
                           (plan.requires_dist.empty() ? pin : plan.requires_dist.front()) +
                           " for torch's C++ ABI; for its stable C ABI alone, torch>= the oldest release whose "
                           "stable headers declare every function it calls ([wheel] torch_pin = false: none)");
  if (!any_cuda && chain.tk) plan.notes.push_back("wheel version: no CUDA op is built, so the label says cpu");
  plan.exports = OPFORGE_TRY(build_exports(m, plan, any_cuda && chain.tk ? toolkit : Env{}, catalogue.ds_root));
  return plan;
}

}  // namespace opforge::plan
