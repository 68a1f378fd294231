/// plan::make's op catalogue: op.toml manifests or DeepSpeed's op_builder/, and the verdict on each
/// op (ops::decide, with DeepSpeed's own is_compatible() for its builders).
#include "ops/ops.h"
#include "plan/stages.h"
#include "settings/child_env.h"
#include "settings/settings.h"

namespace opforge::plan {
namespace {

/// DeepSpeed's own verdicts: is_compatible() of each op still in question, asked with the
/// project's Python in the environment a build gets (`toolkit`, on the caller's).
decltype(ops::DecideContext::compatibility) deepspeed_verdicts(probe::Machine m, const Plan& plan,
                                                               const fs::path& ds_root, const fs::path& cache,
                                                               const Env& toolkit) {
  auto env =
      settings::ChildEnv(m.env, settings::Child::command).layer(toolkit).set_default("DS_ACCELERATOR", "cuda").vars();
  std::string torch_id =
      plan.cuda.torch ? plan.cuda.torch->torch_dir.string() + ":" + plan.cuda.torch->torch_version_py_sha256 : "";
  return [m, root = ds_root, python = plan.python, env, cache, torch_id](const std::vector<ops::Manifest>& ask) {
    return ops::deepspeed_compatibility(m, {root, python, ask, env, cache, torch_id});
  };
}

}  // namespace

Result<OpCatalogue> load_catalogue(probe::Machine m, const recipe::Recipe& r, SourceInfo& source,
                                   const std::string& python, bool command, std::vector<std::string>& notes) {
  OpCatalogue out;
  const bool explicit_ops_dir = r.locations.contains("source.ops_dir");
  const bool ops_dir_exists = m.fs.resolved_type(source.ops_dir) == probe::FileType::directory;
  if (!source.not_fetched.empty()) {
    source.catalogue = Catalogue::none;
    source.ops_dir.clear();
    notes.push_back("source: not fetched yet (" + source.not_fetched +
                    "): `opforge build` fetches it; the op table and its verdicts need the tree");
    return out;
  }
  if (explicit_ops_dir && source.ops_dir.filename() == "op_builder" &&
      ops::has_op_builder(m.fs, source.ops_dir.parent_path()))
    out.ds_root = source.ops_dir.parent_path();
  else if (!explicit_ops_dir && !ops_dir_exists && ops::has_op_builder(m.fs, source.root)) out.ds_root = source.root;
  if (!out.ds_root.empty()) {
    if (!command)
      return bad_input("'" + (out.ds_root / "op_builder").string() +
                           "' holds DeepSpeed's op builders, which build through its own setup.py",
                       "set [build] backend = \"command\" (see docs/external-projects.md)");
    source.catalogue = Catalogue::op_builder;
    source.ops_dir = out.ds_root / "op_builder";
    out.manifests = OPFORGE_TRY(ops::load_deepspeed_catalogue(m, out.ds_root, python));
    notes.push_back("ops: " + std::to_string(out.manifests.size()) + " DeepSpeed op builders in " +
                    source.ops_dir.string());
  } else if (command && !explicit_ops_dir && !ops_dir_exists) {
    source.catalogue = Catalogue::none;
    source.ops_dir.clear();  // the default src/kernels is nobody's folder here: plan names none
    notes.push_back("ops: no op catalogue in " + source.root.string() +
                    " (neither op.toml manifests nor op_builder/): the command decides what it builds");
  } else {
    out.manifests = OPFORGE_TRY(ops::load_manifests(m, source.ops_dir, source.root));
    notes.push_back("ops: " + std::to_string(out.manifests.size()) + " manifests in " + source.ops_dir.string());
  }
  return out;
}

Result<std::vector<ops::Decision>> decide_ops(probe::Machine m, const Options& opts, Plan& plan,
                                              const OpCatalogue& catalogue, const Toolchain& chain,
                                              const Env& toolkit) {
  const bool op_builder = plan.source.catalogue == Catalogue::op_builder;
  ops::DecideContext ctx;
  ctx.cuda_unavailable = chain.unavailable;
  ctx.cuda_fix = chain.fix;
  ctx.probe_compiler = chain.probe_compiler;
  ctx.cache_dir = cache_dir(m, opts);
  if (op_builder) {
    ctx.default_off = true;
    ctx.compatibility = deepspeed_verdicts(m, plan, catalogue.ds_root, ctx.cache_dir, toolkit);
  }
  auto decisions = OPFORGE_TRY(ops::decide(m, catalogue.manifests, plan.recipe, ctx));
  for (auto& d : decisions)
    if (d.requested() || !op_builder)
      plan.notes.push_back("op " + d.manifest.name + ": " + ops::status_name(d.status) + " — " + d.requested_by +
                           (d.reason.empty() ? "" : "; " + d.reason));
  return decisions;
}

}  // namespace opforge::plan
