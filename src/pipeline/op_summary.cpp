/// What a build says of its ops (built, skipped, failed, not requested: op_summary and the
/// record's op_summary) and of its GPU code (arch_summary).
#include <algorithm>
#include <set>

#include "pipeline/stages.h"
#include "util/strings.h"

namespace opforge::pipeline {

void apply_op_steps(plan::Plan& plan, const std::vector<compile::OpStep>& steps) {
  for (auto& step : steps) {
    if (step.status != compile::OpStatus::failed) continue;
    for (auto& d : plan.ops)
      if (d.manifest.name == step.op) {
        d.status = ops::OpStatus::failed;
        d.reason = step.first_error + (step.log.empty() ? "" : " (log: " + step.log.string() + ")");
      }
  }
  // The build got this far: every op it was to build and did not fail is in the wheel.
  for (auto& d : plan.ops)
    if (d.status == ops::OpStatus::build) d.status = ops::OpStatus::built;
}

nlohmann::json summary_json(const std::vector<OpSummaryLine>& lines) {
  nlohmann::json out = nlohmann::json::array();
  for (auto& l : lines) {
    nlohmann::json j = {{"op", l.op}, {"status", ops::status_name(l.status)}, {"reason", l.reason}};
    if (l.seconds >= 0) j["seconds"] = static_cast<double>(static_cast<long>(l.seconds * 10 + 0.5)) / 10;
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<std::string> planned_gpu_targets(const plan::Plan& plan) {
  std::vector<std::string> out;
  for (const auto& a : plan.arch.arches) out.push_back("sm_" + a.sm());
  for (const auto& a : plan.arch.arches)
    if (a.ptx) out.push_back("compute_" + a.sm());
  return out;
}

std::string arch_summary(const plan::Plan& plan, const std::vector<std::string>& project,
                         const std::vector<std::string>& compiled, const std::vector<std::string>& unwrapped) {
  if (plan.arch.arches.empty() && compiled.empty()) return "";
  const auto planned = planned_gpu_targets(plan);
  // Compared as sets of numbers: a fatbinary names sm_90a's code sm_90.
  auto numbers = [](const std::vector<std::string>& v) {
    std::set<std::string> out;
    for (auto t : v) {
      while (!t.empty() && t.back() >= 'a' && t.back() <= 'z') t.pop_back();
      out.insert(t);
    }
    return out;
  };
  std::string line = "GPU code: " + (compiled.empty() ? std::string("none") : strings::join(compiled, " "));
  if (!project.empty()) {
    const bool same = numbers(project) == numbers(planned);
    if (plan.recipe.arch.enforce)
      line += same ? " (the project asked for the same)"
                   : "; the project asked for " + strings::join(project, " ") + " (" + std::to_string(project.size()) +
                         "), replaced by the plan's " + plan.arch.str() +
                         " ([arch] enforce = false keeps the project's)";
    else line += "; the project's own list " + strings::join(project, " ") + " ([arch] enforce = false)";
  }
  // A wheel whose GPU code is not the plan's never gets here: check_gpu_code refuses it. Its code
  // can be the plan's with compiles the wrapper never saw (a project that follows
  // TORCH_CUDA_ARCH_LIST and starts nvcc by its own path): what the wrapper did is not claimed for them.
  if (!unwrapped.empty()) {
    std::vector<std::string> shown(unwrapped.begin(),
                                   unwrapped.begin() + static_cast<long>(std::min<std::size_t>(unwrapped.size(), 3)));
    line += "\n  warning: " + std::to_string(unwrapped.size()) + " CUDA compile" + (unwrapped.size() == 1 ? "" : "s") +
            " ran nvcc without opforge's wrapper (" + strings::join(shown, ", ") +
            (unwrapped.size() > shown.size() ? ", …" : "") + "): what " + (unwrapped.size() == 1 ? "it" : "they") +
            " asked nvcc for is not known, and opforge's arch list and reproducibility flags (-frandom-seed, "
            "no -lineinfo) did not reach " +
            (unwrapped.size() == 1 ? "it" : "them");
  }
  return line;
}

std::vector<OpSummaryLine> op_summary(const plan::Plan& plan, const std::vector<compile::OpStep>& steps) {
  std::vector<OpSummaryLine> out;
  for (auto& d : plan.ops) {
    OpSummaryLine l{d.manifest.name, ops::OpStatus::built, "", -1};
    auto step = std::find_if(steps.begin(), steps.end(), [&](auto& s) { return s.op == d.manifest.name; });
    if (step != steps.end()) l.seconds = step->seconds;
    if (step != steps.end() && step->status == compile::OpStatus::failed) {
      l.status = ops::OpStatus::failed;
      l.reason = step->first_error;  // the summary's line is short: the log is named by the build's error
    } else if (d.status == ops::OpStatus::skipped || d.status == ops::OpStatus::not_requested) {
      l.status = d.status;
      l.reason = d.reason;
    }
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace opforge::pipeline
