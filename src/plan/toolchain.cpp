/// plan::make's toolchain: the CUDA toolkit (found, or provisioned from PyPI), the host compiler
/// nvcc accepts, the GPU architectures, and the CPU target's compiler wrappers.
#include <algorithm>

#include "compiler/cpu_target.h"
#include "compiler/host.h"
#include "cuda/mismatch.h"
#include "cuda/resolve.h"
#include "plan/provision_stage.h"
#include "plan/stages.h"
#include "probe/overlay_environment.h"
#include "util/strings.h"

namespace opforge::plan {
namespace {

/// torch's extension builder (what a command build compiles with) refuses a toolkit of another
/// CUDA major whatever DS_SKIP_CUDA_CHECK says; a minor difference is PyTorch's warning, and in a
/// DeepSpeed tree DeepSpeed's stricter check (exact major.minor) is told through
/// DS_SKIP_CUDA_CHECK=1 (toolkit_exports), which the warning then names. Other projects never
/// hear of DeepSpeed's variable.
Status check_torch_cuda(Plan& plan, const cuda::Toolkit& tk) {
  if (!plan.cuda.torch) return {};
  auto match = cuda::torch_match(*plan.cuda.torch, tk);
  if (match.mismatch == cuda::Mismatch::major && recipe::project_build(plan.recipe)) {
    const Version& tc = *plan.cuda.torch->cuda;
    return unsatisfied(match.message, "install CUDA " + std::to_string(tc.major) +
                                          ".x (or set CUDA_HOME to one), or a torch built for CUDA " +
                                          std::to_string(tk.version.major));
  }
  if (match.mismatch == cuda::Mismatch::minor) {
    plan.cuda_minor_mismatch = true;
    plan.warnings.push_back(match.message + (plan.source.catalogue == Catalogue::op_builder
                                                 ? "; DeepSpeed's stricter check is bypassed with DS_SKIP_CUDA_CHECK=1"
                                                 : ""));
  }
  return {};
}

}  // namespace

Result<Toolchain> resolve_toolkit(probe::Machine m, const Options& opts, Plan& plan) {
  const recipe::Recipe& r = plan.recipe;
  Toolchain chain;
  chain.probe_compiler = r.compiler.host == "auto" ? "c++" : r.compiler.host;
  auto cuda = opts.resolvers.cuda(m, r.cuda.version, plan.python);
  if (auto got = OPFORGE_TRY(provision_toolkit(m, opts, plan, cuda))) {
    // The provisioned folder is looked at, and validated, like a toolkit CUDA_HOME names (torch,
    // read once already, is not read again: a Python start is most of a plan's time).
    probe::OverlayMachine named(m, {{"CUDA_HOME", got->dir.string()}});
    cuda = cuda::choose(cuda::discover(named.machine(), got->torch), r.cuda.version, named.machine().env);
    if (cuda) label_provisioned(*cuda, *plan.provision);
  }
  if (!cuda) {
    if (cuda.error().kind == ErrorKind::bad_input || cuda.error().names_user_setting)
      return opforge::unexpected(cuda.error());
    chain.unavailable = cuda.error().message;
    plan.notes.push_back("toolkit: none (" + chain.unavailable + ")");
    return chain;
  }
  plan.cuda = *cuda;
  // The resolver's own minor-mismatch warning is said again, in full, by check_torch_cuda.
  for (std::size_t i = 0; i < plan.cuda.warnings.size(); ++i)
    if (i != plan.cuda.minor_mismatch_warning) plan.warnings.push_back(plan.cuda.warnings[i]);
  if (!plan.cuda.chosen) {
    chain.unavailable = "no CUDA toolkit found";
    return chain;
  }
  chain.tk = &*plan.cuda.chosen;
  OPFORGE_CHECK(check_torch_cuda(plan, *chain.tk));
  plan.notes.push_back("toolkit: CUDA " + chain.tk->version.str() + " at " + chain.tk->root.string());
  return chain;
}

Status resolve_host(probe::Machine m, const Options& opts, Plan& plan, Toolchain& chain) {
  const recipe::Recipe& r = plan.recipe;
  auto host = opts.resolvers.host(m, *chain.tk, r.compiler.host, r.compiler.allow_unsupported, plan.build_dir / "shim");
  if (!host) {
    if (host.error().kind == ErrorKind::bad_input) return opforge::unexpected(host.error());
    chain.unavailable = "no host compiler that nvcc " + chain.tk->version.str() + " accepts: " + host.error().message;
    // The toolkit is there: the compiler is what to change.
    chain.fix = host.error().hint.empty() ? "set [compiler] host to a compiler nvcc " + chain.tk->version.str() +
                                                " accepts (`opforge doctor` lists them)"
                                          : host.error().hint;
    return {};
  }
  plan.host = *host;
  // The compiler itself: plan writes nothing, so the shim that links to it may not exist yet.
  chain.probe_compiler = host->compiler.cxx.string();
  plan.notes.push_back("host compiler: " + host->compiler.cxx.string() + " " + host->compiler.version.str(3) + " (" +
                       host->reason + ")");
  return {};
}

Status resolve_arch(probe::Machine m, const Options& opts, const Overrides& overrides, Plan& plan, Toolchain& chain) {
  if (!chain.unavailable.empty()) return {};
  if (overrides.arch_list == recipe::kNoArchList) {
    // A wheel without GPU code on purpose: no arch list reaches the project, CUDA ops are
    // unavailable (said so, or an error for one requested), and the label says cpu.
    plan.arch.source = std::string(kNoGpuCodeSource);
    plan.arch.gpu_reader = "not read ([arch] list = \"none\")";
    chain.unavailable = "[arch] list = \"none\": this recipe builds no GPU code";
    chain.fix = "give [arch] list the GPUs' architectures (\"auto\", \"9.0\")";
    plan.notes.push_back("arch list: none ([arch] list = \"none\": a wheel without GPU code, on purpose)");
    return {};
  }
  const bool from_nodes = overrides.arch_from == kFromNodes;
  const bool from_env = from_nodes || overrides.arch_from == "TORCH_CUDA_ARCH_LIST";
  auto arch = opts.resolvers.arch(m, *chain.tk, overrides.arch_list, plan.recipe.arch.fallback);
  if (!arch) {
    if (arch.error().kind != ErrorKind::bad_input) {
      chain.unavailable = arch.error().message;
      return {};
    }
    Error e = arch.error();
    if (from_env) e.message = "TORCH_CUDA_ARCH_LIST: " + e.message;
    return opforge::unexpected(e);
  }
  plan.arch = *arch;
  if (from_env || overrides.arch_from == "recipe [matrix] arch") plan.arch.source = overrides.arch_from;
  if (from_nodes) plan.arch.gpu_reader = "not read (the node reports decide)";
  else if (from_env) plan.arch.gpu_reader = "not read (TORCH_CUDA_ARCH_LIST is set)";
  plan.notes.push_back("arch list: " + plan.arch.str() + " (from " + plan.arch.source + ")");
  // An entry asked for and not built changes what the wheel serves: a warning in every command
  // (build printed nothing), and the record keeps it beside what was built (arch_dropped).
  for (auto& [entry, why] : plan.arch.dropped)
    plan.warnings.push_back("arch " + strings::cut(entry) + " (asked for by " + plan.arch.source + ") dropped: " + why);
  return {};
}

Status pin_cpu_target(probe::Machine m, const Options& opts, Plan& plan) {
  const recipe::Recipe& r = plan.recipe;
  if (r.build.cpu_target.empty()) return {};
  auto target = target::find_cpu_target(r.build.cpu_target);
  if (!target) return bad_input("unknown [build] cpu_target \"" + r.build.cpu_target + "\"");
  // A CPU of another machine than the wheel's: nothing it allows could run there.
  if (target->platform != plan.platform->name)
    return bad_input("[build] cpu_target \"" + target->name + "\" is an " + target->platform +
                         " CPU, and the wheel is for " + std::string(plan.platform->name),
                     "for " + std::string(plan.platform->name) + " write one of " +
                         strings::join(target::cpu_target_names(plan.platform->name), ", ") +
                         ", or set [build] platform (--platform) to " + target->platform);
  if (!plan.host) plan.host = OPFORGE_TRY(compiler::host_without_toolkit(m, r.compiler.host));
  const fs::path cache = cache_dir(m, opts);
  fs::path dir = compiler::wrapper_dir(m.fs, cache.empty() ? plan.build_dir : cache, plan.host->compiler, *target);
  plan.host = compiler::pin_cpu_target(*plan.host, dir, target->name);
  plan.notes.push_back("cpu target: " + target->name + " (-march=native becomes -march=" + target->name +
                       "; compilers wrapped in " + dir.string() + ")");
  return {};
}

Status named_host_for_cpu_code(probe::Machine m, Plan& plan, Toolchain& chain) {
  const std::string host(strings::trim(plan.recipe.compiler.host));
  if (plan.host || host.empty() || host == "auto") return {};
  plan.host = OPFORGE_TRY(compiler::host_without_toolkit(m, host));
  plan.notes.push_back("host compiler: " + plan.host->compiler.cxx.string() + " " + plan.host->compiler.version.str(3) +
                       " ([compiler] host, for the CPU code)");
  chain.probe_compiler = plan.host->compiler.cxx.string();
  return {};
}

bool carries_cuda(const Plan& plan, const Toolchain& chain) {
  if (recipe::project_build(plan.recipe) && chain.tk && chain.unavailable.empty()) return true;
  return std::any_of(plan.ops.begin(), plan.ops.end(),
                     [](const ops::Decision& d) { return d.builds() && ops::needs_toolkit(d.manifest.kind); });
}

}  // namespace opforge::plan
