/// The native backend's build: compile::run's libraries packed into a wheel, or the identical wheel
/// dist/ already holds reused.
#include <algorithm>

#include "pipeline/dist.h"
#include "pipeline/stages.h"
#include "plan/jobs.h"
#include "util/strings.h"
#include "wheel/wheel.h"

namespace opforge::pipeline {

namespace {

/// Packs `spec` and commits it with `rec` into dist/, unless an intact wheel made from exactly
/// these inputs (rec.inputs' fingerprint) is there already: a no-op rebuild keeps it.
Result<Outcome> commit_or_reuse(probe::Machine m, Outcome outcome, const wheel::Spec& spec, record::Record rec,
                                const Options& options) {
  const plan::Plan& plan = outcome.plan;
  const auto name = OPFORGE_TRY(wheel::file_name(spec));
  auto dist_lock = OPFORGE_TRY(lock_dist(m, plan.dist_dir, options.on_line));
  // A kill of another build may have left a commit half-done since this build started.
  OPFORGE_CHECK(recover_dist(m, plan.dist_dir));
  if (auto reused = find_reusable(m, plan.dist_dir, name, rec.inputs["fingerprint"].get<std::string>())) {
    outcome.wheel = reused->first;
    outcome.record = reused->second;
    outcome.wheel_sha256 = outcome.record.outputs[outcome.record.wheel];
    outcome.record_path = record::path_for(outcome.wheel);
    outcome.tags = tags_of(outcome.wheel);
    if (auto bytes = m.fs.read_file(outcome.wheel, wheel::Limits{}.archive_bytes)) outcome.needs = needs_of(*bytes);
    outcome.reused = true;
    return outcome;
  }
  auto packed = OPFORGE_TRY(wheel::pack(spec));
  outcome.wheel = plan.dist_dir / packed.filename;
  outcome.wheel_sha256 = packed.sha256;
  outcome.tags = packed.tags;
  outcome.needs = needs_of(packed.bytes);
  outcome.platform_reason = strings::join(packed.platform.reasons, "; ");
  rec.wheel = packed.filename;
  rec.outputs[rec.wheel] = packed.sha256;
  outcome.record_path = record::path_for(outcome.wheel);
  OPFORGE_CHECK(commit(m, outcome.wheel, packed.bytes, rec));
  outcome.record = std::move(rec);
  return outcome;
}

}  // namespace

Result<Outcome> build_native(probe::Machine m, Outcome outcome, const fs::path& recipe_file,
                             const std::string& recipe_text, const Options& options) {
  const plan::Plan& plan = outcome.plan;
  compile::RunOptions run_options;
  run_options.on_line = options.on_line;
  run_options.on_step = options.on_step;
  auto ran = OPFORGE_TRY(compile::run(m, plan, run_options));
  // "auto" ops whose compile failed are left out, as if skipped: the wheel, build_info and the
  // record then name the same ops.
  for (auto& [op, error] : ran.failed)
    outcome.op_steps.push_back(
        {.op = op, .status = compile::OpStatus::failed, .first_error = error, .log = {}, .seconds = -1});
  apply_op_steps(outcome.plan, outcome.op_steps);
  auto graph = OPFORGE_TRY(compile::describe(plan));
  if (ran.steps_run > 0) {  // ninja's largest compile stands for each op it built
    std::map<std::string, std::uint64_t> peaks;
    for (auto& d : plan.ops)
      if (d.builds()) peaks[d.manifest.name] = static_cast<std::uint64_t>(std::max(0L, ran.peak_rss_kib));
    plan::store_compile_peaks(m.fs, cache_dir(m, options), peaks);
  }
  outcome.steps_run = ran.steps_run;
  outcome.cache = ran.cache;
  outcome.sccache = ran.sccache;
  outcome.sccache_said = ran.sccache_said;
  fs::path package = options.python_package.empty() ? default_python_package(m.fs) : options.python_package;
  wheel::BuildInfo info;
  record::Record rec;
  auto files = OPFORGE_TRY(wheel_files(m, plan, ran, package, info, rec.outputs));
  const wheel::Spec spec = wheel_spec(plan, info, std::move(files));
  rec.inputs = record_inputs(m, plan, graph, m.fs.absolute(recipe_file), recipe_text);
  rec.inputs["fingerprint"] = fingerprint(spec, rec.inputs);
  // Where the compile steps ran: kept in the record beside the fingerprint, never in the wheel
  // (a step compiled on a build server gives the same bytes as one compiled here).
  if (ran.sccache) rec.inputs["compile_steps"] = compile_steps_json(*ran.sccache);
  return commit_or_reuse(m, std::move(outcome), spec, std::move(rec), options);
}

}  // namespace opforge::pipeline
