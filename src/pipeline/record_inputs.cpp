/// The build record's inputs: everything the wheel was made from (recipe, source, toolkit, compiler,
/// arch list, flags, the recorded environment), a command build's extras, and the fingerprint a
/// no-op rebuild is recognised by.
#include "compile/wrap/environment.h"
#include "opforge/version.h"
#include "pipeline/stages.h"
#include "record/record.h"
#include "root/root.h"
#include "settings/child_env.h"
#include "settings/settings.h"
#include "util/hash.h"

namespace opforge::pipeline {

std::string compiler_text(const plan::Plan& plan) {
  if (!plan.host) return "";
  const auto& c = plan.host->compiler;
  return std::string(compiler::family_name(c.family)) + " " + c.version.str(3);
}

nlohmann::json record_inputs(probe::Machine m, const plan::Plan& plan, const compile::Graph& graph,
                             const fs::path& recipe_file, const std::string& recipe_text) {
  nlohmann::json in;
  in["opforge_version"] = kVersion;
  in["recipe"] = {{"path", recipe_file.string()}, {"sha256", sha256_hex(recipe_text)}};
  in["source"] = {{"root", plan.source.root.string()},
                  {"commit", plan.source.commit},
                  {"dirty", plan.source.dirty},
                  {"release", plan.recipe.build.release}};
  if (plan.cuda.chosen) {
    auto& tk = *plan.cuda.chosen;
    in["toolkit"] = {{"root", tk.root.string()}, {"version", tk.version.str()}, {"nvcc_version", tk.nvcc_version_text}};
    if (plan.provision) {
      // Which wheels the toolkit came from, not where this machine keeps them: the folder is the cache's.
      auto p = util::json_parse(cuda::provision_json_text(*plan.provision));
      in["toolkit"]["provisioned"] = {{"requirement", p["requirement"]},
                                      {"requirement_source", p["requirement_source"]},
                                      {"packages", p["packages"]}};
    }
  }
  if (plan.host)
    in["compiler"] = {{"cxx", plan.host->compiler.cxx.string()},
                      {"version", compiler_text(plan)},
                      {"shim", plan.host->shim_dir ? plan.host->shim_dir->string() : ""}};
  in["arch_list"] = plan.arch.str();
  if (!plan.arch.dropped.empty()) {
    nlohmann::json dropped = nlohmann::json::object();
    for (auto& [entry, why] : plan.arch.dropped) dropped[entry] = why;
    in["arch_dropped"] = dropped;  // asked for, not built (only when there are some: fingerprints stay)
  }
  // the headers the ops' Python extensions were compiled against (stable ABI: any Python 3 from
  // their floor gives a working extension, but the bytes follow the headers)
  if (!plan.python_include.empty()) in["python_include"] = plan.python_include.string();
  if (!plan.recipe.build.cpu_target.empty()) in["cpu_target"] = plan.recipe.build.cpu_target;
  // A cross-build: the machine it was for (only then, so that earlier fingerprints stay) and which
  // runtime wheel its CUDA code linked, not where this machine keeps it.
  if (plan.cross()) {
    in["platform"] = std::string(plan.platform->name);
    if (plan.cuda_target) {
      auto t = util::json_parse(cuda::target_files_json_text(*plan.cuda_target));
      in["cuda_target"] = {{"requirement", t["requirement"]}, {"packages", t["packages"]}};
    }
  }
  if (plan.recipe.wheel.glibc_floor) in["glibc_floor"] = "2." + std::to_string(plan.recipe.wheel.glibc_floor);
  in["source_date_epoch"] = plan.source_date_epoch;
  nlohmann::json ops = nlohmann::json::object();
  for (auto& o : graph.outputs) ops[o.op] = {{"flags", o.flags}};
  in["ops"] = ops;
  nlohmann::json env = nlohmann::json::object();
  // What a build's children get of the caller's environment: the recorded variables among them.
  for (auto& [k, v] : settings::ChildEnv(m.env, settings::Child::command).vars())
    if (record::recorded_variable(k)) env[k] = v;
  in["environment"] = env;
  // Built inside a root: which one, so that `verify` rebuilds there (and refuses when it changed).
  if (auto root = settings::enclosing_root(m.env))
    if (auto info = root::describe_from_inside(m, *root)) in["root"] = root::identity(*info);
  return in;
}

nlohmann::json compile_steps_json(const compile::SccacheStats& stats) {
  nlohmann::json servers = nlohmann::json::object();
  for (auto& [server, n] : stats.servers) servers[server] = n;
  return {{"sccache",
           {{"here", stats.local()},
            {"build_servers", servers},
            {"from_cache", stats.hits},
            {"failed_on_a_server", stats.dist_errors}}}};
}

std::string fingerprint(const wheel::Spec& spec, const nlohmann::json& inputs) {
  std::string text = util::json_dump(inputs) + "\n" + spec.name + "\n" + spec.version + "\n" + spec.summary + "\n" +
                     spec.description + "\n" + spec.requires_python + "\n" + std::to_string(spec.source_date_epoch);
  for (auto& f : spec.files) text += "\n" + f.path + " " + std::to_string(f.mode) + " " + sha256_hex(f.content);
  return sha256_hex(text);
}

nlohmann::json command_inputs(probe::Machine m, const plan::Plan& plan, const compile::CommandOutput& out,
                              const fs::path& recipe_file, const std::string& recipe_text) {
  nlohmann::json in = record_inputs(m, plan, compile::Graph{}, m.fs.absolute(recipe_file), recipe_text);
  in["command"] = plan.recipe.build.command;
  in["command_log"] = out.log.string();
  in["build_tree"] = {{"path", out.tree.string()}, {"content_sha256", out.tree_hash}};
  in["catalogue"] = plan::catalogue_name(plan.source.catalogue);
  nlohmann::json ops = nlohmann::json::object();
  for (auto& d : plan.ops)
    if (d.builds())
      ops[d.manifest.name] = {{"kind", ops::kind_name(d.manifest.kind)}, {"requested_by", d.requested_by}};
  in["ops"] = ops;
  if (plan.source.catalogue == plan::Catalogue::op_builder) in["ops_installed"] = out.installed_ops;
  if (plan.cuda.torch && plan.cuda.torch->torch_version)
    in["torch"] = {{"version", *plan.cuda.torch->torch_version},
                   {"cuda", plan.cuda.torch->cuda ? plan.cuda.torch->cuda->str() : ""},
                   {"python", plan.cuda.torch->python},
                   {"requirement", plan::torch_pin(*plan.cuda.torch->torch_version)}};
  nlohmann::json cenv = nlohmann::json::object();
  const auto base = settings::ChildEnv(m.env, settings::Child::command).vars();
  for (auto& [k, v] : out.env)
    if (auto it = base.find(k); it == base.end() || it->second != v) cenv[k] = v;
  in["command_environment"] = cenv;
  // A cross-build: which torch wheel for the target its libraries were compiled and linked against.
  if (plan.target_torch) {
    auto t = util::json_parse(cuda::target_torch_json_text(*plan.target_torch));
    in["target_torch"] = {{"requirement", t["requirement"]}, {"cuda", t["cuda"]}, {"packages", t["packages"]}};
  }
  if (!plan.recipe.build.env.empty()) in["build_env"] = plan.recipe.build.env;
  return in;
}

}  // namespace opforge::pipeline
