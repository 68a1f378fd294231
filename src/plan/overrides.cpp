/// plan::make's overrides: the environment variables (and --nodes) that override the recipe, each
/// checked before anything is probed, and the jobs, SOURCE_DATE_EPOCH and compile timeout they decide.
#include <chrono>

#include "plan/jobs.h"
#include "plan/stages.h"
#include "settings/settings.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace opforge::plan {

Result<Overrides> read_overrides(const probe::Environment& environment, const recipe::Recipe& r, const Options& opts,
                                 std::vector<std::string>& notes) {
  Overrides out;
  out.arch_list = r.arch.list;
  out.arch_from = "recipe [arch] list";
  if (opts.cell_arch_list) {
    // The matrix's axis beats the environment: one TORCH_CUDA_ARCH_LIST would make every arch cell
    // of a CI job the same wheel.
    out.arch_list = *opts.cell_arch_list;
    out.arch_from = "recipe [matrix] arch";
    notes.push_back("arch list: this [matrix] cell's '" + *opts.cell_arch_list +
                    "' (TORCH_CUDA_ARCH_LIST is not read)");
  } else if (opts.node_arch_list) {
    out.arch_list = *opts.node_arch_list;
    out.arch_from = kFromNodes;
    notes.push_back("arch list: the node reports' '" + *opts.node_arch_list + "' overrides the recipe's '" +
                    r.arch.list + "'");
  } else if (auto v = OPFORGE_TRY(settings::arch_list(environment))) {
    out.arch_list = v->text;
    out.arch_from = "TORCH_CUDA_ARCH_LIST";
    notes.push_back("arch list: TORCH_CUDA_ARCH_LIST='" + strings::cut(v->text) + "' overrides the recipe's '" +
                    strings::cut(r.arch.list) + "'");
  }
  if (auto jobs = OPFORGE_TRY(settings::max_jobs(environment))) {
    if (jobs->capped)
      notes.push_back("MAX_JOBS=" + std::to_string(jobs->asked) + " capped at " + std::to_string(settings::kMaxJobs));
    out.max_jobs = jobs->jobs;
  }
  out.epoch = OPFORGE_TRY(settings::source_date_epoch(environment));
  for (auto& [var, value] : settings::toolkit_roots(environment))
    notes.push_back("toolkit: " + var + "=" + value + " is considered first");
  if (settings::skip_cuda_check(environment))
    notes.push_back("DS_SKIP_CUDA_CHECK=1: a torch/toolkit CUDA mismatch is a warning, not an error");
  else if (auto v = settings::ignored_skip_cuda_check(environment))
    notes.push_back("DS_SKIP_CUDA_CHECK=" + strings::cut(*v) +
                    " is not 1: the torch/toolkit CUDA check stays on (DeepSpeed skips it only for exactly 1)");
  return out;
}

unsigned choose_jobs(probe::Machine m, const recipe::Recipe& r, const Options& opts, std::optional<unsigned> max_jobs,
                     const std::vector<ops::Decision>& decisions, std::vector<std::string>& notes, std::string& why,
                     bool pch) {
  unsigned jobs = 0;
  std::string from;
  if (opts.jobs) {
    jobs = *opts.jobs;
    from = "-j";
  } else if (max_jobs) {
    jobs = *max_jobs;
    from = "MAX_JOBS";
  } else if (r.build.jobs) {
    jobs = r.build.jobs;
    from = "recipe [build] jobs";
  } else {
    const auto available = available_memory(m.fs);
    const bool cgroup = available && available->from != "MemAvailable";
    auto fit = memory_aware_jobs(m.env.cpu_count(), available ? std::optional(available->kib) : std::nullopt, decisions,
                                 load_compile_peaks(m.fs, cache_dir(m, opts)), cgroup ? available->from : std::string(),
                                 recipe::project_build(r) ? steps_peak_key(r.package.name) : std::string(),
                                 pch ? kPchMakeKib : 0);
    jobs = fit.jobs;
    from = fit.why;
  }
  notes.push_back("jobs: " + std::to_string(jobs) + " (" + from + ")");
  why = from;
  return jobs;
}

std::int64_t choose_epoch(std::optional<std::int64_t> env_epoch, const SourceInfo& source,
                          std::vector<std::string>& notes) {
  if (!env_epoch && !source.not_fetched.empty()) {
    // `plan` fetches nothing: the build reads the time from the commit it checks out.
    notes.push_back("SOURCE_DATE_EPOCH: the commit's time (read when the source is fetched)");
    return wheel::kMinEpoch;
  }
  std::int64_t epoch = env_epoch ? *env_epoch : source.commit_time.value_or(wheel::kMinEpoch);
  if (epoch < wheel::kMinEpoch) {
    notes.push_back("SOURCE_DATE_EPOCH " + std::to_string(epoch) + " clamped to " + std::to_string(wheel::kMinEpoch) +
                    " (1980-01-01, the zip minimum)");
    return wheel::kMinEpoch;
  }
  notes.push_back("SOURCE_DATE_EPOCH: " + std::to_string(epoch) +
                  (env_epoch            ? " (environment)"
                   : source.commit_time ? " (the commit's time)"
                                        : " (default 1980-01-01)"));
  return epoch;
}

}  // namespace opforge::plan
