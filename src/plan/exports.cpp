/// plan::make's exports: the environment a build gets (what `opforge env` prints): the toolkit's
/// and compiler's variables, DeepSpeed's switches (an op tree's builds only), every op's build
/// variable, MAX_JOBS and SOURCE_DATE_EPOCH; a note when the caller's CUDACXX gives way to the plan's toolkit.
#include "compiler/host.h"
#include "plan/stages.h"
#include "settings/settings.h"

namespace opforge::plan {
namespace {

/// CC, CXX and PATH for `host` (compiler::environment, the one rule), PATH continuing `ex`'s or the caller's.
Status add_compiler(probe::Machine m, const compiler::HostChoice& host, Env& ex) {
  std::string path = ex.count("PATH") ? ex["PATH"] : settings::path(m.env);
  for (auto& [k, v] : OPFORGE_TRY(compiler::environment(host, path))) ex[k] = v;
  return {};
}

}  // namespace

Result<Env> toolkit_exports(probe::Machine m, const Options& opts, const Plan& plan, const Toolchain& chain) {
  Env ex;
  if (!chain.tk || !chain.unavailable.empty()) return ex;
  ex = opts.resolvers.cuda_exports(*chain.tk, m.env);
  ex["TORCH_CUDA_ARCH_LIST"] = plan.arch.str();
  if (plan.host) OPFORGE_CHECK(add_compiler(m, *plan.host, ex));
  if (plan.source.catalogue == Catalogue::op_builder) {
    // A GPU-less build machine must still build for the CUDA accelerator (DeepSpeed picks its CPU
    // accelerator when no GPU is visible).
    ex["DS_ACCELERATOR"] = "cuda";
    if (plan.cuda_minor_mismatch) ex["DS_SKIP_CUDA_CHECK"] = "1";
  }
  return ex;
}

Result<Env> build_exports(probe::Machine m, Plan& plan, const Env& toolkit, const fs::path& ds_root) {
  Env ex = toolkit;
  // A pinned CPU target reaches the compiler through the shim's wrappers, CUDA or not; a named
  // [compiler] host is the one the CPU code compiles with.
  if (plan.host && toolkit.empty() && (!plan.host->cpu_target.empty() || plan.recipe.compiler.host != "auto"))
    OPFORGE_CHECK(add_compiler(m, *plan.host, ex));
  if (plan.source.catalogue == Catalogue::op_builder) {
    // torch's BuildExtension uses ninja (and MAX_JOBS) only when DeepSpeed is told to.
    ex["DS_ENABLE_NINJA"] = "1";
    deepspeed_version(m, plan, ds_root, ex);
  }
  // Every op gets an explicit 1/0 and DS_BUILD_OPS=0, so a DeepSpeed-style build sees exactly
  // this op set whatever its own defaults are; a project without an op catalogue has no DS_*
  // switch to be told.
  if (plan.source.catalogue != Catalogue::none) ex["DS_BUILD_OPS"] = "0";
  for (auto& d : plan.ops) ex[d.manifest.build_var] = d.builds() ? "1" : "0";
  ex["MAX_JOBS"] = std::to_string(plan.jobs);
  if (!plan.epoch_at_fetch) ex["SOURCE_DATE_EPOCH"] = std::to_string(plan.source_date_epoch);
  // The caller's CUDACXX would pick CMake's nvcc; a command build gives CMake the plan's toolkit
  // instead (compile/wrap/environment.cpp), so that the wheel holds what the plan says.
  if (auto own = settings::cuda_compiler(m.env);
      own && recipe::project_build(plan.recipe) && !toolkit.empty() && plan.cuda.chosen)
    plan.notes.push_back("CUDACXX: the environment's " + *own + " gives way to the plan's toolkit (CUDA " +
                         plan.cuda.chosen->version.str() + " at " + plan.cuda.chosen->root.string() +
                         ", through opforge's nvcc wrapper) for the project's CMake; choose the toolkit with "
                         "[cuda] version or CUDA_HOME");
  return ex;
}

}  // namespace opforge::plan
