#include <algorithm>
#include <filesystem>
#include <iostream>
#include <regex>

#include "cli/command.h"
#include "pipeline/pipeline.h"
#include "recipe/recipe.h"
#include "record/record.h"

namespace opforge::cli {
namespace {

namespace fs = std::filesystem;

struct BuildFlags {
  std::string recipe;
  unsigned jobs = 0;
  std::string cache;
  std::string python;
  std::string build_dir;
  std::string dist_dir;
  bool release = false;
  std::string release_of;
};

Result<pipeline::Options> pipeline_options(probe::Machine m, const BuildFlags& flags) {
  pipeline::Options options;
  if (flags.jobs) options.plan.jobs = flags.jobs;
  if (!flags.python.empty()) options.plan.python = flags.python;
  options.plan.release = flags.release;
  if (!flags.release_of.empty()) {
    auto rec = OPFORGE_TRY(record::load(m.fs, flags.release_of));
    options.plan.release_commit = OPFORGE_TRY(record::source_commit(flags.release_of, rec));
  }
  if (!flags.build_dir.empty()) options.build_dir = flags.build_dir;
  if (!flags.dist_dir.empty()) options.dist_dir = flags.dist_dir;
  if (flags.cache == "ccache") options.plan.cache = recipe::Cache::ccache;
  else if (flags.cache == "none") options.plan.cache = recipe::Cache::none;
  else if (!flags.cache.empty()) return bad_input("--cache " + flags.cache + ": expected 'ccache' or 'none'");
  return options;
}

/// What the terminal shows of a build's output. A project's own build (setup.py) prints thousands
/// of lines, all kept in command.log: the terminal gets its extensions, ninja's progress (one
/// object per line) and its errors.
std::function<void(std::string_view)> progress_printer(bool command) {
  return [command](std::string_view line) {
    if (line.starts_with("ninja: Entering") || line.starts_with("ninja: no work")) return;
    if (!command) {
      std::cout << line << "\n" << std::flush;
      return;
    }
    static const std::regex progress(R"(^(\[\d+/\d+\]) .* -o (\S+)(\s.*)?$)");
    std::string text(line);
    std::smatch mm;
    if (std::regex_match(text, mm, progress)) {
      std::cout << mm[1].str() << " " << fs::path(mm[2].str()).filename().string() << "\n" << std::flush;
    } else if (text.starts_with("building '") || text.starts_with("waiting for ") || text.starts_with("opforge: ") ||
               text.find("error:") != std::string::npos || text.find("Error:") != std::string::npos ||
               text.find("Error ") != std::string::npos) {
      std::cout << text << "\n" << std::flush;
    }
  };
}

/// Ops a project's setup.py added on its own (DeepSpeed: pin_memory with async_io).
void print_added_ops(const pipeline::Outcome& outcome, const std::string& prefix) {
  const auto& plan = outcome.plan;
  if (auto it = outcome.record.inputs.find("ops_installed"); it != outcome.record.inputs.end() && it->is_array())
    for (auto& op : *it) {
      std::string name = op.is_string() ? op.get<std::string>() : "";
      bool planned =
          std::any_of(plan.ops.begin(), plan.ops.end(), [&](auto& d) { return d.build && d.manifest.name == name; });
      if (!name.empty() && !planned) std::cout << prefix << name << " (added by the project's setup.py)\n";
    }
}

/// A DeepSpeed tree's summary: one line per op of its catalogue, with each compile step's seconds.
void print_op_summary(const pipeline::Outcome& outcome) {
  auto lines = pipeline::op_summary(outcome.plan, outcome.op_steps);
  // An op the project's setup.py added on its own is listed once, as added (print_added_ops).
  if (auto it = outcome.record.inputs.find("ops_installed"); it != outcome.record.inputs.end() && it->is_array())
    std::erase_if(lines, [&](const pipeline::OpSummaryLine& l) {
      return l.status == "not requested" && std::find(it->begin(), it->end(), l.op) != it->end();
    });
  std::size_t width = 0;
  for (auto& l : lines) width = std::max(width, l.op.size());
  std::cout << "ops:\n";
  for (auto& l : lines) {
    std::string row = "  " + l.status + std::string(15 - std::min<std::size_t>(14, l.status.size()), ' ') + l.op;
    if (l.seconds >= 0 || !l.reason.empty()) row += std::string(width - l.op.size(), ' ');
    if (l.seconds >= 0) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%7.1f s", l.seconds);
      row += secs;
    }
    if (!l.reason.empty()) row += "  " + l.reason;
    std::cout << row << "\n";
  }
  print_added_ops(outcome, "  built          ");
}

void print_ops(const pipeline::Outcome& outcome) {
  const auto& plan = outcome.plan;
  if (plan.source.catalogue == "op_builder" && plan.recipe.build.backend == recipe::Backend::command) {
    print_op_summary(outcome);
    return;
  }
  for (auto& d : plan.ops) {
    // DeepSpeed's two dozen builders: those nobody asked for are not listed.
    if (plan.source.catalogue == "op_builder" && !d.build && d.reason == "not requested") continue;
    const bool failed = !d.build && d.reason.starts_with("failed: ");
    std::cout << (d.build  ? "  built    "
                  : failed ? "  failed   "
                           : "  skipped  ")
              << d.manifest.name << (d.build ? "" : " (" + (failed ? d.reason.substr(8) : d.reason) + ")") << "\n";
  }
  print_added_ops(outcome, "  built    ");
}

void print_outcome(const pipeline::Outcome& outcome) {
  for (auto& w : outcome.plan.warnings) std::cout << "warning: " << w << "\n";
  print_ops(outcome);
  if (outcome.steps_run == 0) std::cout << "nothing to compile: every op is up to date\n";
  else if (outcome.cache) std::cout << compile::describe_cache_stats(*outcome.cache) << "\n";
  if (outcome.reused) std::cout << "the wheel in dist/ was made from these exact inputs: kept as it is\n";
  std::cout << "wheel:  " << outcome.wheel.string() << "\n"
            << "sha256: " << outcome.wheel_sha256 << "\n"
            << "tags:   " << (outcome.tags.empty() ? "" : outcome.tags.front()) << "\n";
  if (!outcome.platform_reason.empty()) std::cout << "        (not manylinux: " << outcome.platform_reason << ")\n";
  std::cout << "record: " << outcome.record_path.string() << "\n";
}

Status run_build(const BuildFlags& flags) {
  auto m = probe::real_machine();
  auto options = OPFORGE_TRY(pipeline_options(m, flags));
  const bool command = [&] {
    auto r = recipe::load(m, flags.recipe);
    return r && r->build.backend == recipe::Backend::command;
  }();
  options.on_line = progress_printer(command);
  print_outcome(OPFORGE_TRY(pipeline::build_wheel(m, flags.recipe, options)));
  return {};
}

Registrar reg{
    {"build", "Build the recipe's ops and package them into a reproducible wheel", [](CLI::App& app) -> Runner {
       auto flags = std::make_shared<BuildFlags>();
       app.add_option("recipe", flags->recipe, "recipe file (TOML)")->required();
       app.add_option("-j,--jobs", flags->jobs, "parallel jobs (default: MAX_JOBS, the recipe, all cores)");
       app.add_option("--cache", flags->cache, "compiler cache: ccache | none");
       app.add_option("--python", flags->python, "the Python whose torch decides the CUDA version");
       app.add_option("--build-dir", flags->build_dir, "build folder (default from the recipe)");
       app.add_option("--dist-dir", flags->dist_dir, "where the wheel goes (default from the recipe)");
       app.add_flag("--release", flags->release, "refuse a dirty source tree or a moving git rev (a branch)");
       app.add_option("--release-of", flags->release_of,
                      "rebuild the release a build record describes: --release, and the source must "
                      "resolve to the record's commit (a branch rev is then accepted)");
       return [flags] { return run_build(*flags); };
     }}};

}  // namespace
}  // namespace opforge::cli
