/// `opforge build`: the plan, the build folder's lock, the build's kind (kinds.h: native_build.cpp,
/// command_build.cpp), then the wheel's line in dist/SUMMARY.md.
#include "pipeline/pipeline.h"

#include <algorithm>
#include <chrono>

#include "compiler/host.h"
#include "pipeline/dist.h"
#include "pipeline/kinds.h"
#include "pipeline/stages.h"
#include "pipeline/wheelhouse.h"
#include "settings/settings.h"
#include "util/strings.h"

namespace opforge::pipeline {
namespace {

/// A folder opforge writes into must be one that build.ninja, depfiles and the printed
/// `wheel:`/`record:` lines can carry: ninja has no escape for a line break. (' ', ':', '$' and
/// '#' are escaped where they appear; the compiler shim's folder on PATH is checked by the plan.)
Status check_folder_name(const fs::path& dir, std::string_view what, std::string_view flag) {
  const std::string s = dir.string();
  if (s.find_first_of("\n\r") == std::string::npos) return {};
  return bad_input(std::string(what) + " '" + strings::cut(s) +
                       "' contains a line break: build.ninja and opforge's one-line outputs cannot carry it",
                   "choose a folder name without line breaks (" + std::string(flag) + ")");
}

/// The plan, with --build-dir / --dist-dir made absolute, in folders opforge can write.
Result<plan::Plan> make_plan(probe::Machine m, const fs::path& recipe_file, const Options& options) {
  plan::Options plan_options = options.plan;
  if (options.build_dir) plan_options.build_dir = m.fs.absolute(*options.build_dir);
  if (options.dist_dir) plan_options.dist_dir = m.fs.absolute(*options.dist_dir);
  if (!plan_options.on_progress) plan_options.on_progress = options.on_line;
  auto plan = OPFORGE_TRY(plan::make(m, recipe_file, plan_options));
  OPFORGE_CHECK(check_folder_name(plan.build_dir, "the build folder", "--build-dir or [build] build_dir"));
  OPFORGE_CHECK(check_folder_name(plan.dist_dir, "the dist folder", "--dist-dir or [build] dist_dir"));
  // A missing program is exit 3 before the build folder is touched, not a failed step later.
  OPFORGE_CHECK(plan::check_tools(m, plan));
  return plan;
}

}  // namespace

SummaryRow summary_row(const Outcome& done, const std::string& cell, std::chrono::steady_clock::duration took) {
  const plan::Plan& plan = done.plan;
  SummaryRow row;
  row.cell = cell.empty() ? "default" : cell;
  row.wheel = done.wheel.filename().string();
  row.sha256 = done.wheel_sha256;
  for (auto& d : plan.ops)
    if (d.builds()) row.ops.push_back(d.manifest.name);
  if (auto it = done.record.inputs.find("ops_installed"); it != done.record.inputs.end() && it->is_array())
    for (auto& op : *it)
      if (op.is_string() && std::find(row.ops.begin(), row.ops.end(), op.get<std::string>()) == row.ops.end())
        row.ops.push_back(op.get<std::string>());
  if (plan.cuda.chosen) {
    row.toolkit = "CUDA " + plan.cuda.chosen->version.str() + " (" +
                  (plan.provision ? "PyPI: " + plan.provision->requirement : plan.cuda.chosen->root.string()) + ")";
  }
  if (plan.cuda.torch && plan.cuda.torch->torch_version) row.torch = *plan.cuda.torch->torch_version;
  row.seconds = std::chrono::duration<double>(took).count();
  return row;
}

fs::path cache_dir(probe::Machine m, const Options&) { return settings::cache_dir(m.env); }

fs::path default_python_package(const probe::FileSystem& fs) { return probe::data_dir(fs) / "src/python/opforge_ops"; }

Result<Outcome> build_wheel(probe::Machine m, const fs::path& recipe_file, const Options& options) {
  const auto start = std::chrono::steady_clock::now();
  Outcome outcome;
  outcome.plan = OPFORGE_TRY(make_plan(m, recipe_file, options));
  if (options.glibc_floor) outcome.plan.recipe.wheel.glibc_floor = *options.glibc_floor;
  const plan::Plan& plan = outcome.plan;
  OPFORGE_CHECK(m.fs.create_directories(plan.build_dir));
  auto lock = OPFORGE_TRY(m.fs.try_lock(plan.build_dir / ".opforge.lock"));
  if (!lock)
    return failure("another opforge build is running in " + plan.build_dir.string() + " (it holds .opforge.lock)",
                   "wait for it to finish, or build into another folder with --build-dir");
  if (m.fs.resolved_type(plan.dist_dir) == probe::FileType::directory) {
    auto dist_lock = OPFORGE_TRY(lock_dist(m, plan.dist_dir, options.on_line));
    OPFORGE_CHECK(recover_dist(m, plan.dist_dir));
  }
  // Both backends reach the compiler through the shim when the plan has one (compiler::invocation).
  if (plan.host) OPFORGE_CHECK(compiler::ensure_shim(m.fs, *plan.host));
  auto recipe_text = m.fs.read_file(recipe_file).value_or("");
  const Kind& k = kind(plan.recipe.build.backend);
  Outcome done = OPFORGE_TRY(k.build(m, std::move(outcome), recipe_file, recipe_text, options));
  auto dist_lock = OPFORGE_TRY(lock_dist(m, done.plan.dist_dir, options.on_line));
  if (done.plan.recipe.wheel.variants && !options.plain_only) OPFORGE_CHECK(write_variant(m, done));
  OPFORGE_CHECK(
      land(m.fs, done.plan.dist_dir, summary_row(done, options.cell, std::chrono::steady_clock::now() - start)));
  return done;
}

}  // namespace opforge::pipeline
