#include "plan/json.h"
#include "util/json.h"

namespace opforge::plan {

nlohmann::json to_json(const Plan& p) {
  using nlohmann::json;
  json j;
  j["recipe"] = p.recipe.file.string();
  j["source"] = {{"root", p.source.root.string()},
                 {"ops_dir", p.source.ops_dir.string()},
                 {"commit", p.source.commit},
                 {"dirty", p.source.dirty},
                 {"catalogue", catalogue_name(p.source.catalogue)}};
  if (!p.source.not_fetched.empty()) j["source"]["not_fetched"] = p.source.not_fetched;
  j["cuda_minor_mismatch"] = p.cuda_minor_mismatch;
  json cands = json::array();
  for (auto& c : p.cuda.candidates)
    cands.push_back({{"path", c.path.string()},
                     {"found_by", c.found_by},
                     {"chosen", c.chosen()},
                     {"version", c.toolkit ? c.toolkit->version.str() : ""},
                     {"layout", c.toolkit ? std::string(cuda::layout_name(c.toolkit->layout)) : ""},
                     {"verdict", c.said()},
                     {"status", cuda::verdict_name(c.verdict)}});
  j["cuda"] = {{"chosen", p.cuda.chosen ? json(p.cuda.chosen->root.string()) : json(nullptr)},
               {"version", p.cuda.chosen ? json(p.cuda.chosen->version.str()) : json(nullptr)},
               {"candidates", cands},
               {"warnings", p.cuda.warnings}};
  j["provision"] = p.provision ? util::json_parse(cuda::provision_json_text(*p.provision)) : json(nullptr);
  j["platform"] = {{"name", std::string(p.platform->name)},
                   {"cross", p.cross()},
                   {"build_machine", std::string(target::host_platform().name)}};
  j["cuda_target"] = p.cuda_target ? util::json_parse(cuda::target_files_json_text(*p.cuda_target)) : json(nullptr);
  j["target_torch"] = p.target_torch ? util::json_parse(cuda::target_torch_json_text(*p.target_torch)) : json(nullptr);
  if (p.cross_command)
    j["cross_command"] = {{"sysconfig", p.cross_command->sysconfig},
                          {"sysconfig_file", p.cross_command->sysconfig_file.string()},
                          {"host_platform", p.cross_command->host_platform},
                          {"ext_suffix", p.cross_command->ext_suffix}};
  if (p.host)
    j["host_compiler"] = {{"cc", p.host->compiler.cc.string()},
                          {"cxx", p.host->compiler.cxx.string()},
                          {"version", p.host->compiler.version.str(3)},
                          {"shim_dir", p.host->shim_dir ? json(p.host->shim_dir->string()) : json(nullptr)},
                          {"allow_unsupported", p.host->allow_unsupported},
                          {"reason", p.host->reason}};
  else j["host_compiler"] = nullptr;
  json dropped = json::array();
  for (auto& [e, why] : p.arch.dropped) dropped.push_back({{"entry", e}, {"why", why}});
  j["arch"] = {{"list", p.arch.str()}, {"source", p.arch.source}, {"dropped", dropped}, {"notes", p.arch.notes}};
  json ops = json::array();
  for (auto& d : p.ops)
    ops.push_back({{"name", d.manifest.name},
                   {"kind", ops::kind_name(d.manifest.kind)},
                   {"build", d.builds()},
                   {"build_var", d.manifest.build_var},
                   {"requested_by", d.requested_by},
                   {"status", ops::status_name(d.status)},
                   {"reason", d.reason}});
  j["ops"] = ops;
  j["jobs"] = p.jobs;
  j["jobs_reason"] = p.jobs_reason;
  j["source_date_epoch"] = p.epoch_at_fetch ? nlohmann::json() : nlohmann::json(p.source_date_epoch);
  if (!p.python_include.empty()) j["python_include"] = p.python_include.string();
  j["wheel_version"] = p.wheel_version;
  j["build_dir"] = p.build_dir.string();
  j["dist_dir"] = p.dist_dir.string();
  j["exports"] = p.exports;
  j["notes"] = p.notes;
  j["warnings"] = p.warnings;
  j["commands"] = json::array();  // filled by the build stage once it exists
  return j;
}

}  // namespace opforge::plan
