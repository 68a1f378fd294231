#include <iostream>

#include "build/pipeline.h"
#include "cli/command.h"
#include "probe/overlay_environment.h"
#include "wheel/wheel.h"

namespace opforge::cli {
namespace {

Status verify_wheel(const std::string& path) {
  auto m = probe::real_machine();
  auto report = OPFORGE_TRY(wheel::verify(m.fs, path));
  if (report.ok()) {
    std::cout << path << ": ok (every RECORD hash and size, names, tags and paths check out)\n";
    return {};
  }
  std::string problems;
  for (auto& p : report.problems) problems += "\n  " + p;
  return failure(path + ": the wheel does not verify:" + problems);
}

/// Rebuilds from a build record into a temporary folder and compares every output's hash.
Status verify_record(const std::string& path) {
  auto m = probe::real_machine();
  auto expected = OPFORGE_TRY(record::load(m.fs, path));
  std::string recipe = expected.inputs.value("recipe", nlohmann::json::object()).value("path", "");
  if (recipe.empty()) return bad_input(path + ": the record names no recipe");
  std::map<std::string, std::string> recorded;
  const auto recorded_env = expected.inputs.value("environment", nlohmann::json::object());
  for (auto& [k, v] : recorded_env.items())
    if (v.is_string()) recorded[k] = v.get<std::string>();
  // The rebuild sees the recorded DS_BUILD_*, TORCH_CUDA_ARCH_LIST and SOURCE_DATE_EPOCH; those
  // unset at record time stay unset.
  probe::OverlayEnvironment env(m.env, recorded, [](const std::string& name) {
    return name.starts_with("DS_BUILD_") || name == "TORCH_CUDA_ARCH_LIST" || name == "SOURCE_DATE_EPOCH";
  });
  probe::Machine rebuild{m.fs, m.proc, env, m.dl};
  build::PipelineOptions options;
  // A release is rebuilt from its own commit: a branch that has moved since is refused by name.
  if (expected.inputs.value("source", nlohmann::json::object()).value("release", false))
    options.plan.release_commit = OPFORGE_TRY(record::source_commit(path, expected));
  auto tmp = OPFORGE_TRY(m.fs.make_temp_directory("opforge-verify-"));
  options.build_dir = tmp / "build";
  options.dist_dir = tmp / "dist";
  auto outcome = build::build_wheel(rebuild, recipe, options);
  if (!outcome) {
    (void)m.fs.remove_all(tmp);
    return std::unexpected(outcome.error());
  }
  auto diffs = record::differences(expected, outcome->record);
  (void)m.fs.remove_all(tmp);
  if (diffs.empty()) {
    std::cout << path << ": ok (the rebuild gave identical bytes for " << expected.outputs.size()
              << " outputs)\n";
    return {};
  }
  std::string list;
  for (auto& d : diffs) list += "\n  differs: " + d;
  return failure(path + ": the rebuild differs from the record:" + list,
                 "compare the inputs in the record (toolkit, compiler, environment) with this machine's");
}

Registrar reg{{"verify", "Check a wheel (RECORD hashes, names, tags, paths) or rebuild from a build record and compare",
               [](CLI::App& app) -> Runner {
                 auto target = std::make_shared<std::string>();
                 app.add_option("target", *target, "a .whl, or a .opforge-record.json")->required();
                 return [target] {
                   return target->ends_with(".whl") ? verify_wheel(*target) : verify_record(*target);
                 };
               }}};

}  // namespace
}  // namespace opforge::cli
