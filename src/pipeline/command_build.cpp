/// The command backend's build: the project's own command (compile::run_command_backend), its
/// wheel checked, normalised into the build folder and committed into dist/ with its record.
#include <cmath>

#include "pipeline/dist.h"
#include "pipeline/stages.h"
#include "plan/jobs.h"
#include "util/hash.h"
#include "util/strings.h"
#include "wheel/wheel.h"

namespace opforge::pipeline {

Result<Outcome> build_with_command(probe::Machine m, Outcome outcome, const fs::path& recipe_file,
                                   const std::string& recipe_text, const Options& options) {
  const plan::Plan& plan = outcome.plan;
  auto out = OPFORGE_TRY(compile::run_command_backend(
      m, plan, {.wheel_dir = plan.build_dir / "normalized", .on_line = options.on_line, .on_step = options.on_step}));
  apply_op_steps(outcome.plan, out.op_steps);
  {
    std::map<std::string, std::uint64_t> peaks;
    for (auto& step : out.op_steps)
      if (step.status == compile::OpStatus::built && step.peak_rss_kib > 0)
        peaks[step.op] = static_cast<std::uint64_t>(step.peak_rss_kib);
    // A project's own compile steps (no ops): the heaviest, for the next build's job count.
    std::uint64_t heaviest = 0;
    for (auto& step : out.step_peaks) heaviest = std::max(heaviest, step.peak_kib);
    if (heaviest > 0 && out.op_steps.empty()) peaks[plan::steps_peak_key(plan.recipe.package.name)] = heaviest;
    plan::store_compile_peaks(m.fs, cache_dir(m, options), peaks);
  }
  // What ran, as the step watcher saw it: not the plan's job count.
  if (!out.step_peaks.empty()) outcome.memory_said = compile::steps_said(out.step_peaks, plan.jobs);
  outcome.op_steps = out.op_steps;
  auto bytes = OPFORGE_TRY(m.fs.read_file(out.wheel, wheel::Limits{}.archive_bytes));
  OPFORGE_CHECK(check_command_wheel(plan, bytes, out.wheel));
  outcome.project_arch = out.project_arch;
  outcome.unwrapped = out.unwrapped;
  outcome.compiled_arch = wheel_gpu_targets(bytes);
  {
    GpuCodeSeen seen{.by_library = wheel_gpu_targets_by_file(bytes),
                     .libraries = wheel_library_count(bytes),
                     .wrapper_saw_nvcc = out.nvcc_commands > 0,
                     .env = out.env,
                     .wheel = out.wheel,
                     .log = out.log};
    OPFORGE_CHECK(check_gpu_code(plan, gpu_code_promise(plan), seen));
  }
  // Per library where they differ (a project's sm_90a-only extension beside its plain ones).
  if (auto by_file = wheel_gpu_targets_by_file(bytes);
      std::adjacent_find(by_file.begin(), by_file.end(), [](auto& a, auto& b) { return a.second != b.second; }) !=
      by_file.end())
    outcome.compiled_arch_by_file = std::move(by_file);
  outcome.wheel = plan.dist_dir / out.wheel.filename();
  outcome.wheel_sha256 = sha256_hex(bytes);
  outcome.needs = needs_of(bytes);
  outcome.steps_run = 1;
  outcome.sccache = out.sccache;
  outcome.sccache_said = out.sccache_said;
  outcome.tags = tags_of(out.wheel);
  // Why the tag is not manylinux, as a native build says it (the retag happened in normalising).
  if (auto seen = wheel::inspect_bytes(out.wheel.filename().string(), bytes); seen && seen->computed.glibc_minor)
    outcome.platform_reason = strings::join(seen->computed.reasons, "; ");
  record::Record rec;
  rec.wheel = out.wheel.filename().string();
  rec.outputs[rec.wheel] = outcome.wheel_sha256;
  rec.inputs = command_inputs(m, plan, out, recipe_file, recipe_text);
  rec.inputs["arch"] = {{"list", plan.arch.str()},
                        {"enforced", plan.recipe.arch.enforce},
                        {"project_asked", outcome.project_arch},
                        {"compiled", outcome.compiled_arch}};
  if (!outcome.compiled_arch_by_file.empty()) rec.inputs["arch"]["compiled_by_library"] = outcome.compiled_arch_by_file;
  // project_asked is what the wrapper saw; these compiles it never saw.
  if (!out.unwrapped.empty()) rec.inputs["arch"]["unwrapped_compiles"] = out.unwrapped;
  if (out.sccache) rec.inputs["compile_steps"] = compile_steps_json(*out.sccache);
  if (!out.step_peaks.empty()) {
    nlohmann::json steps = nlohmann::json::object();
    for (auto& step : out.step_peaks)
      steps[step.source] = {{"seconds", std::round(step.seconds * 10) / 10}, {"peak_kib", step.peak_kib}};
    rec.inputs["step_peaks"] = steps;
  }
  if (const auto& steps = out.ninja_steps; out.resumed || steps.reused || steps.compiled) {
    nlohmann::json seconds = nlohmann::json::object();
    for (auto& [output, s] : steps.times) seconds[output] = std::round(s * 10) / 10;
    rec.inputs["ninja_steps"] = {{"resumed", out.resumed},
                                 {"restored_files", out.restored},
                                 {"reused", steps.reused},
                                 {"compiled", steps.compiled},
                                 {"seconds", seconds}};
    if (out.resumed)
      outcome.resume_said = "resumed: " + std::to_string(steps.reused) + " of " +
                            std::to_string(steps.reused + steps.compiled) + " compile steps reused from the tree an " +
                            "interrupted build left, " + std::to_string(steps.compiled) + " compiled";
  }
  rec.inputs["gcc_gc"] = {{"heap_kib", plan.gcc_gc_heap_kib}, {"why", plan.gcc_gc_why}};
  rec.inputs["pch"] = {{"on", plan.pch}, {"why", plan.pch_why}};
  if (out.pch) {
    rec.inputs["pch"]["made"] = out.pch->made;
    rec.inputs["pch"]["used"] = out.pch->used;
    rec.inputs["pch"]["without"] =
        out.pch->fallback + out.pch->not_used + out.pch->skipped + out.pch->busy + out.pch->first;
    rec.inputs["pch"]["notes"] = out.pch->notes;
    if (out.pch->any()) {
      outcome.pch_said = compile::pch::summary_line(*out.pch);
      for (const auto& n : out.pch->notes) outcome.pch_said += "\n  " + n;
    }
  }
  if (out.torch_link.abi != wheel::TorchAbi::none) {
    rec.inputs["torch_linkage"] = {{"abi", wheel::torch_abi_name(out.torch_link.abi)},
                                   {"evidence", out.torch_link.evidence},
                                   {"requires", out.torch_requirement}};
    if (!out.torch_floor_why.empty()) {
      rec.inputs["torch_linkage"]["stable_symbols"] = out.torch_link.stable_symbols;
      rec.inputs["torch_linkage"]["floor"] = out.torch_floor_why;
    }
    outcome.torch_said =
        "torch: " + std::string(wheel::torch_abi_name(out.torch_link.abi)) + " (" +
        strings::join(out.torch_link.evidence, ", ") + "): " +
        (out.torch_requirement.empty()
             ? std::string(plan.recipe.wheel.torch_pin ? "Requires-Dist on torch left as it was"
                                                       : "no Requires-Dist added ([wheel] torch_pin = false)")
             : "Requires-Dist " + out.torch_requirement +
                   (out.torch_floor_why.empty() ? std::string() : " (" + out.torch_floor_why + ")"));
  }
  if (plan.source.catalogue == plan::Catalogue::op_builder)
    rec.inputs["op_summary"] = summary_json(op_summary(plan, out.op_steps));
  outcome.record_path = record::path_for(outcome.wheel);
  {
    auto dist_lock = OPFORGE_TRY(lock_dist(m, plan.dist_dir, options.on_line));
    OPFORGE_CHECK(recover_dist(m, plan.dist_dir));
    OPFORGE_CHECK(commit(m, outcome.wheel, bytes, rec));
  }
  (void)m.fs.remove(out.wheel);
  outcome.record = std::move(rec);
  return outcome;
}

}  // namespace opforge::pipeline
