/// plan::make's platform: the machine the wheel is for and, for another machine than this one,
/// the cross compiler and the target's CUDA runtime (a cross-build).
#include "compiler/resolve.h"
#include "plan/stages.h"
#include "util/strings.h"

namespace opforge::plan {

Status choose_platform(const Options& opts, Plan& plan) {
  std::string name = plan.recipe.build.platform;
  if (opts.platform) {
    const auto* p = target::find_platform(strings::trim(*opts.platform));
    if (!p)
      return bad_input("--platform: unknown platform \"" + strings::cut(*opts.platform) + "\"",
                       "accepted values: " + target::platform_names());
    name = std::string(p->name);
  }
  if (name.empty()) return {};
  plan.platform = target::find_platform(name);
  if (!plan.cross()) return {};
  plan.notes.push_back("platform: " + std::string(plan.platform->name) + " (" +
                       (opts.platform ? "--platform" : "[build] platform") + "), cross-built on this " +
                       std::string(target::host_platform().name) + " machine");
  if (plan.recipe.wheel.root)
    return bad_input("[wheel] root and a cross-build for " + std::string(plan.platform->name) +
                     " cannot be combined: a root is a distribution of this machine's");
  return {};
}

Status resolve_cross_host(probe::Machine m, Plan& plan, Toolchain& chain) {
  const recipe::Recipe& r = plan.recipe;
  const cuda::Toolkit* tk = chain.unavailable.empty() ? chain.tk : nullptr;
  auto host = compiler::resolve_cross(m, tk, *plan.platform, r.compiler.host, r.compiler.allow_unsupported,
                                      plan.build_dir / "shim");
  if (!host) return opforge::unexpected(host.error());
  plan.host = *host;
  chain.probe_compiler = host->compiler.cxx.string();
  plan.notes.push_back("host compiler: " + host->compiler.cxx.string() + " " + host->compiler.version.str(3) + " (" +
                       host->reason + ")");
  return {};
}

/// A command build links the project's libraries with its own flags (-lcudart: the shared
/// runtime), so it needs the target's runtime whenever a toolkit is chosen.
Status provision_cross_runtime(probe::Machine m, const Options& opts, Plan& plan, const Toolchain& chain) {
  if (!plan.cross() || !chain.tk || !chain.unavailable.empty()) return {};
  const bool cuda_op = std::any_of(plan.ops.begin(), plan.ops.end(), [](const ops::Decision& d) {
    return d.builds() && ops::needs_toolkit(d.manifest.kind);
  });
  if (!cuda_op && !recipe::project_build(plan.recipe)) return {};
  const fs::path cache = cache_dir(m, opts);
  auto files = opts.fetch_toolkit
                   ? cuda::provision_target_files(m, *chain.tk, *plan.platform, cache, plan.python, opts.on_progress)
                   : cuda::describe_target_files(m, *chain.tk, *plan.platform, cache, plan.python);
  if (!files) return opforge::unexpected(files.error());
  plan.cuda_target = std::move(*files);
  plan.cross_nvcc_includes = {"-I" + plan.cuda_target->include_dir.string()};
  if (const fs::path cccl = chain.tk->include_dir / "cccl"; m.fs.resolved_type(cccl) == probe::FileType::directory)
    plan.cross_nvcc_includes.insert(plan.cross_nvcc_includes.end(), {"-isystem", cccl.string()});
  const auto& t = *plan.cuda_target;
  plan.notes.push_back("cuda runtime for " + t.platform + ": " + t.requirement + " (release from " + t.release_source +
                       ") in " + t.dir.string() +
                       (t.present || t.fetched ? "" : ", fetched from PyPI by the build (not there yet)"));
  return {};
}

}  // namespace opforge::plan
