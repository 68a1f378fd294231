#include "plan/provision_stage.h"

#include <chrono>

#include "cuda/resolve.h"
#include "settings/settings.h"
#include "util/strings.h"

namespace opforge::plan {

namespace {

Status check_pip(probe::Machine m, const cuda::Provision& p) {
  auto ran = m.proc.run({.argv = {p.python, "-m", "pip", "--version"}, .timeout = std::chrono::seconds(60)});
  if (ran && ran->ok()) return {};
  return unsatisfied(
      "[cuda] provision = \"pypi\" installs CUDA " + p.cuda.str() + " (" + p.requirement + ") with `" + p.python +
          " -m pip`, and " + p.python + " has no pip",
      "install pip for it (apt-get install python3-pip, dnf install python3-pip, or " + p.python + " -m ensurepip)");
}

}  // namespace

Result<std::optional<Provisioned>> provision_toolkit(probe::Machine m, const Options& opts, Plan& plan,
                                                     const Result<cuda::Resolution>& first) {
  if (plan.recipe.cuda.provision != "pypi") return std::nullopt;
  // An inherited CUDA_HOME/CUDA_PATH does not stop it: provision = "pypi" is the recipe's explicit
  // request, and only a toolkit of torch's exact CUDA (below) makes it unneeded.
  std::optional<cuda::TorchInfo> torch = first ? first->torch : cuda::read_torch(m, plan.python);
  // No torch (or no Python): the resolver's own error says so.
  if (!torch || !torch->torch_version) return std::nullopt;
  if (first && first->chosen && torch->cuda && first->chosen->version == *torch->cuda) {
    plan.notes.push_back("provision: the installed CUDA " + first->chosen->version.str() + " at " +
                         first->chosen->root.string() + " is torch's exact version; nothing to provision");
    return std::nullopt;
  }
  const fs::path cache = settings::cache_dir(m.env);
  // pip is what fetches: without it, exit 3 before anything is fetched, and `plan` says so too.
  cuda::Provision p = OPFORGE_TRY(cuda::describe_provision(m, *torch, cache));
  if (!p.present) OPFORGE_CHECK(check_pip(m, p));
  if (opts.fetch_toolkit) p = OPFORGE_TRY(cuda::provision(m, *torch, cache, opts.on_progress));
  plan.provision = p;
  if (!p.present && !p.fetched) {
    plan.notes.push_back("provision: no installed toolkit is torch's CUDA " + p.cuda.str() + "; `opforge build` " +
                         "installs " + p.requirement + " (pinned by " + p.requirement_source + ") with " + p.python +
                         " -m pip into " + p.dir.string());
    return std::nullopt;
  }
  std::vector<std::string> names;
  for (auto& k : p.packages) names.push_back(k.name + " " + k.version);
  plan.notes.push_back("provision: CUDA " + p.cuda.str() + " from PyPI in " + p.dir.string() +
                       (p.fetched ? " (installed now: " : " (reused: ") + strings::join(names, ", ") + ")");
  return Provisioned{p.dir, *torch};
}

void label_provisioned(cuda::Resolution& res, const cuda::Provision& p) {
  for (auto& c : res.candidates) {
    if (!c.found_through(cuda::Origin::cuda_home)) continue;
    c.found_by = "provisioned from PyPI (" + p.requirement + ")";
    if (c.chosen()) c.why = "torch's exact CUDA " + p.cuda.str() + ", provisioned from PyPI";
  }
}

}  // namespace opforge::plan
