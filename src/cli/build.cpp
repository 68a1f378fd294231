#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "cli/progress.h"
#include "pipeline/matrix.h"
#include "pipeline/pipeline.h"
#include "recipe/bundled.h"
#include "recipe/recipe.h"
#include "record/record.h"
#include "root/root.h"
#include "settings/settings.h"
#include "util/strings.h"
#include "wheel/wheel.h"

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
  bool no_pch = false;
  std::string release_of;
  std::string cell;
  int cell_index = -1;
  std::string glibc;     ///< --glibc
  std::string root;      ///< --root
  std::string platform;  ///< --platform
  bool quiet = false;
  bool verbose = false;
};

Result<pipeline::Options> pipeline_options(probe::Machine m, const BuildFlags& flags) {
  pipeline::Options options;
  if (flags.jobs) options.plan.jobs = flags.jobs;
  if (!flags.python.empty()) options.plan.python = flags.python;
  options.plan.release = flags.release;
  options.plan.no_pch = flags.no_pch;
  if (!flags.platform.empty()) options.plan.platform = flags.platform;
  if (!flags.release_of.empty()) {
    auto rec = OPFORGE_TRY(record::load(m.fs, flags.release_of));
    options.plan.release_commit = OPFORGE_TRY(record::source_commit(flags.release_of, rec));
  }
  if (!flags.glibc.empty()) {
    auto floor = wheel::parse_glibc_floor(flags.glibc);
    if (!floor) return bad_input("--glibc: " + floor.error().message, floor.error().hint);
    options.glibc_floor = *floor;
  }
  if (!flags.build_dir.empty()) options.build_dir = flags.build_dir;
  if (!flags.dist_dir.empty()) options.dist_dir = flags.dist_dir;
  if (!flags.cache.empty()) {
    auto c = recipe::cache_from_name(flags.cache);
    if (!c) return bad_input("--cache " + flags.cache + ": expected " + recipe::cache_names());
    options.plan.cache = *c;
  }
  return options;
}

/// Ops a project's setup.py added on its own (DeepSpeed: pin_memory with async_io).
void print_added_ops(const pipeline::Outcome& outcome, const std::string& prefix) {
  const auto& plan = outcome.plan;
  if (auto it = outcome.record.inputs.find("ops_installed"); it != outcome.record.inputs.end() && it->is_array())
    for (auto& op : *it) {
      std::string name = op.is_string() ? op.get<std::string>() : "";
      bool planned =
          std::any_of(plan.ops.begin(), plan.ops.end(), [&](auto& d) { return d.builds() && d.manifest.name == name; });
      if (!name.empty() && !planned) std::cout << prefix << name << " (added by the project's setup.py)\n";
    }
}

/// A DeepSpeed tree's summary: one line per op of its catalogue, with each compile step's seconds.
void print_op_summary(const pipeline::Outcome& outcome) {
  auto lines = pipeline::op_summary(outcome.plan, outcome.op_steps);
  // An op the project's setup.py added on its own is listed once, as added (print_added_ops).
  if (auto it = outcome.record.inputs.find("ops_installed"); it != outcome.record.inputs.end() && it->is_array())
    std::erase_if(lines, [&](const pipeline::OpSummaryLine& l) {
      return l.status == ops::OpStatus::not_requested && std::find(it->begin(), it->end(), l.op) != it->end();
    });
  std::size_t width = 0;
  for (auto& l : lines) width = std::max(width, l.op.size());
  std::cout << "ops:\n";
  for (auto& l : lines) {
    std::string row = "  " + strings::column(ops::status_name(l.status), 15) + l.op;
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
  if (plan.source.catalogue == plan::Catalogue::op_builder && recipe::project_build(plan.recipe)) {
    print_op_summary(outcome);
    return;
  }
  for (auto& d : plan.ops) {
    // DeepSpeed's two dozen builders: those nobody asked for are not listed.
    if (plan.source.catalogue == plan::Catalogue::op_builder && !d.requested()) continue;
    std::cout << "  " << strings::column(ops::status_name(d.status), 9) << d.manifest.name
              << (d.builds() || d.reason.empty() ? "" : " (" + d.reason + ")") << "\n";
  }
  print_added_ops(outcome, "  built    ");
}

/// What the wheel needs of glibc and libstdc++, and which common distributions that leaves out;
/// the stable-ABI extensions left out for want of Python headers (and the tag that changes).
void print_platform(const pipeline::Outcome& outcome) {
  const auto& plan = outcome.plan;
  for (auto& d : plan.ops)
    if (d.builds() && d.manifest.python_extension && plan.python_include.empty())
      std::cout << "left out: " << d.manifest.python_extension->file_name() << " (the stable-ABI extension of "
                << d.manifest.name << "): no Python headers for " << plan.python
                << " (install python3-dev); the wheel is py3-none instead of cp3"
                << d.manifest.python_extension->floor_minor << "-abi3, and " << d.manifest.name
                << "'s Python code does the extension's work\n";
  if (!outcome.needs) return;
  const auto& n = *outcome.needs;
  std::cout << "glibc:  the wheel needs " << n.needs.str();
  if (plan.recipe.wheel.glibc_floor) {
    std::cout << ": it keeps its floor 2." << plan.recipe.wheel.glibc_floor << "\n";
    return;
  }
  if (n.excluded.empty()) {
    std::cout << ": it runs on every distribution opforge knows\n";
    return;
  }
  std::cout << ": not on " << strings::join(n.excluded, ", ") << "\n"
            << "        (for those: [wheel] glibc checks a floor, --root DIR builds in an older "
               "distribution's root; docs/older-clusters.md)\n";
}

void print_outcome(const pipeline::Outcome& outcome) {
  for (auto& w : outcome.plan.warnings) std::cout << "warning: " << w << "\n";
  print_ops(outcome);
  if (recipe::project_build(outcome.plan.recipe))
    if (auto arch =
            pipeline::arch_summary(outcome.plan, outcome.project_arch, outcome.compiled_arch, outcome.unwrapped);
        !arch.empty()) {
      std::cout << arch << "\n";
      for (auto& [file, targets] : outcome.compiled_arch_by_file)
        std::cout << "  " << file << ": " << strings::join(targets, " ") << "\n";
    }
  if (outcome.steps_run == 0) std::cout << "nothing to compile: every op is up to date\n";
  else if (outcome.cache) std::cout << compile::describe_cache_stats(*outcome.cache) << "\n";
  if (!outcome.resume_said.empty()) std::cout << outcome.resume_said << "\n";
  if (!outcome.memory_said.empty()) std::cout << outcome.memory_said << "\n";
  if (!outcome.pch_said.empty()) std::cout << outcome.pch_said << "\n";
  if (!outcome.torch_said.empty()) std::cout << outcome.torch_said << "\n";
  if (!outcome.sccache_said.empty()) std::cout << outcome.sccache_said << "\n";
  if (outcome.sccache && outcome.steps_run) std::cout << compile::describe_sccache_stats(*outcome.sccache) << "\n";
  if (outcome.reused) std::cout << "the wheel in dist/ was made from these exact inputs: kept as it is\n";
  std::cout << "wheel:  " << outcome.wheel.string() << "\n"
            << "sha256: " << outcome.wheel_sha256 << "\n"
            << "tags:   " << (outcome.tags.empty() ? "" : outcome.tags.front()) << "\n";
  if (!outcome.platform_reason.empty()) std::cout << "        (not manylinux: " << outcome.platform_reason << ")\n";
  print_platform(outcome);
  std::cout << "record: " << outcome.record_path.string() << "\n";
  if (!outcome.variant_wheel.empty())
    std::cout << "variant: " << outcome.variant_wheel.string() << "\n"
              << "         " << strings::join(outcome.variant_properties, ", ") << "\n";
  else if (outcome.plan.recipe.wheel.variants)
    std::cout << "variant: none: the wheel's binaries say nothing a variant carries (no GPU code, no torch C++ ABI)\n";
  for (const auto& note : outcome.variant_notes) std::cout << "         " << note << "\n";
}

/// `opforge build default`: the bundled recipe, built into the working folder (recipe/bundled.h).
BuildFlags resolve_default(probe::Machine m, BuildFlags flags) {
  auto arg = recipe::resolve_recipe_arg(m.fs, flags.recipe);
  flags.recipe = arg.file.string();
  if (flags.build_dir.empty() && arg.build_dir) flags.build_dir = arg.build_dir->string();
  if (flags.dist_dir.empty() && arg.dist_dir) flags.dist_dir = arg.dist_dir->string();
  return flags;
}

/// The wheel a built cell put into dist/: a [matrix] arch cell's variant wheel, else its wheel.
std::string published(const pipeline::CellOutcome& c) {
  if (!c.cell.arch.empty() && !c.cell.fallback) return c.outcome->variant_wheel.filename().string();
  return c.outcome->wheel.filename().string() + (c.cell.fallback ? " (the plain wheel)" : "");
}

/// One line per cell, and exit 1 (naming the failed cells) when any failed.
Status print_cells(const std::vector<pipeline::CellOutcome>& outcomes) {
  std::vector<std::string> failed;
  std::cout << "\ncell                          result  seconds  wheel\n";
  for (auto& c : outcomes) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%7.1f", c.seconds);
    std::string id = c.cell.id;
    id.resize(std::max<std::size_t>(id.size(), 29), ' ');
    std::cout << id << " "
              << (c.outcome              ? "built "
                  : !c.served_by.empty() ? "shared"
                                         : "FAILED")
              << "  " << secs << "  "
              << (c.outcome              ? published(c)
                  : !c.served_by.empty() ? c.served_wheel.filename().string() + " (cell " + c.served_by + "'s)"
                                         : c.error->message.substr(0, c.error->message.find('\n')))
              << "\n";
    if (!c.outcome && c.served_by.empty()) failed.push_back(c.cell.id);
  }
  if (failed.empty()) return {};
  // One cell built alone keeps its own error (and exit code).
  if (outcomes.size() == 1) return opforge::unexpected(*outcomes.front().error);
  return failure(std::to_string(failed.size()) + " of " + std::to_string(outcomes.size()) +
                     " matrix cells failed: " + strings::join(failed, ", "),
                 "rebuild one with --cell ID to see its whole error");
}

/// The exit code of opforge inside a root as this opforge's own error (its message is printed above).
Status inner_status(const fs::path& root, int code) {
  if (code == 0) return {};
  const ErrorKind kind = code == 2 ? ErrorKind::bad_input : code == 3 ? ErrorKind::unsatisfied : ErrorKind::failed;
  return fail(kind, "the build inside the root " + root.string() + " failed (exit " + std::to_string(code) + ")",
              code == 3 ? "what to install is named above: install it inside the root" : "");
}

/// --root / [wheel] root: the build runs inside the root, by opforge itself; nullopt when it runs here.
Result<std::optional<Status>> build_in_root(probe::Machine m, const BuildFlags& flags) {
  if (settings::in_root(m.env)) return std::optional<Status>();
  auto recipe = recipe::load(m, flags.recipe);
  std::optional<fs::path> dir;
  if (!flags.root.empty()) dir = m.fs.absolute(flags.root).lexically_normal();
  else if (recipe && recipe->wheel.root) dir = *recipe->wheel.root;
  if (!dir) return std::optional<Status>();
  if (!recipe) return opforge::unexpected(recipe.error());
  if (!flags.glibc.empty())
    if (auto floor = wheel::parse_glibc_floor(flags.glibc); !floor)
      return bad_input("--glibc: " + floor.error().message, floor.error().hint);
  root::Invocation inv;
  inv.root = *dir;
  inv.recipe = OPFORGE_TRY(m.fs.canonical(flags.recipe));
  if (!flags.build_dir.empty()) inv.build_dir = m.fs.absolute(flags.build_dir);
  if (!flags.dist_dir.empty()) inv.dist_dir = m.fs.absolute(flags.dist_dir);
  if (flags.jobs) inv.args.insert(inv.args.end(), {"-j", std::to_string(flags.jobs)});
  for (auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{{"--cache", flags.cache},
                                                                              {"--python", flags.python},
                                                                              {"--release-of", flags.release_of},
                                                                              {"--cell", flags.cell},
                                                                              {"--glibc", flags.glibc},
                                                                              {"--platform", flags.platform}})
    if (!value.empty()) inv.args.insert(inv.args.end(), {flag, value});
  if (flags.release) inv.args.push_back("--release");
  if (flags.no_pch) inv.args.push_back("--no-pch");
  if (flags.cell_index >= 0) inv.args.insert(inv.args.end(), {"--cell-index", std::to_string(flags.cell_index)});
  auto prepared = OPFORGE_TRY(root::prepare(m, inv));
  std::cout << root::describe_line(prepared.info) << "\n" << std::flush;
  int code = OPFORGE_TRY(root::run(m, prepared.sandbox, prepared.jail, [](std::string_view line) {
    std::cout << line << "\n" << std::flush;
  }));
  return std::optional<Status>(inner_status(*dir, code));
}

Status run_build(const BuildFlags& given) {
  auto m = probe::real_machine();
  const BuildFlags flags = resolve_default(m, given);
  if (auto inside = OPFORGE_TRY(build_in_root(m, flags))) return *inside;
  auto options = OPFORGE_TRY(pipeline_options(m, flags));
  const bool command = [&] {
    auto r = recipe::load(m, flags.recipe);
    return r && recipe::project_build(*r);
  }();
  const Verbosity verbosity = flags.quiet ? Verbosity::quiet : flags.verbose ? Verbosity::verbose : Verbosity::normal;
  ProgressDisplay display(verbosity, command, ProgressDisplay::stdout_is_terminal(m.env));
  options.on_line = [&display](std::string_view line) { display.line(line); };
  options.on_step = [&display](const compile::StepEvent& e) { display.step(e); };
  std::optional<std::size_t> index;
  if (flags.cell_index >= 0) index = static_cast<std::size_t>(flags.cell_index);
  auto cells = OPFORGE_TRY(pipeline::matrix_cells(m, flags.recipe, options, flags.cell, index));
  if (cells.empty()) {
    auto outcome = pipeline::build_wheel(m, flags.recipe, options);
    display.stop();
    if (!outcome) return opforge::unexpected(outcome.error());
    print_outcome(*outcome);
    return {};
  }
  auto outcomes = pipeline::build_cells(m, flags.recipe, options, cells);
  display.stop();
  for (auto& c : outcomes) {
    std::cout << "\n== cell " << c.cell.id << "\n";
    if (c.outcome) print_outcome(*c.outcome);
    if (c.outcome && !c.cell.arch.empty() && !c.cell.fallback)
      std::cout << "published: the variant wheel alone; the plain wheel of its name is the cell's fallback's\n";
    if (!c.served_by.empty())
      std::cout << "served by cell " << c.served_by << "'s wheel (torch's stable C ABI alone, " << c.served_requirement
                << "): " << c.served_wheel.filename().string() << "\n";
    if (!c.load_check.empty()) std::cout << "load check: " << c.load_check << "\n";
    if (!c.outcome && c.served_by.empty()) std::cout << c.error->render() << "\n";
  }
  return print_cells(outcomes);
}

Registrar build_command{
    {"build", "Build the recipe's ops and package them into a reproducible wheel", [](CLI::App& app) -> Runner {
       auto flags = std::make_shared<BuildFlags>();
       app.add_option("recipe", flags->recipe, "recipe file (TOML), or 'default' for the bundled default recipe")
           ->required();
       add_jobs_option(app, flags->jobs, "parallel jobs (default: MAX_JOBS, the recipe, all cores)");
       app.add_option("--cache", flags->cache, "compiler cache: ccache | sccache | none");
       app.add_option("--python", flags->python, "the Python whose torch decides the CUDA version");
       app.add_option("--build-dir", flags->build_dir, "build folder (default from the recipe)");
       app.add_option("--dist-dir", flags->dist_dir, "where the wheel goes (default from the recipe)");
       app.add_flag("--release", flags->release, "refuse a dirty source tree or a moving git rev (a branch)");
       app.add_flag("--no-pch", flags->no_pch,
                    "no precompiled torch header for the host compiles of a command build ([build] pch = false)");
       app.add_option("--release-of", flags->release_of,
                      "rebuild the release a build record describes: --release, and the source must "
                      "resolve to the record's commit (a branch rev is then accepted)");
       app.add_option("--cell", flags->cell, "build only this [matrix] cell (`opforge matrix` lists them)");
       app.add_option("--cell-index", flags->cell_index,
                      "build only the matrix cell at this index (0-based; a SLURM array's $SLURM_ARRAY_TASK_ID)")
           ->check(CLI::NonNegativeNumber);
       app.add_option("--glibc", flags->glibc,
                      "the glibc floor the wheel must keep, 2.28 or manylinux_2_28 (beats [wheel] glibc): a file "
                      "needing more fails the build");
       app.add_option("--root", flags->root,
                      "build inside this root filesystem of an older distribution (beats [wheel] root; "
                      "bubblewrap, or chroot as root)");
       app.add_option("--platform", flags->platform,
                      "the machine the wheel is for: x86_64 or aarch64 (beats [build] platform); another "
                      "machine's is cross-compiled here");
       auto* quiet = app.add_flag("-q,--quiet", flags->quiet, "print no progress: errors and the result only");
       app.add_flag("-v,--verbose", flags->verbose, "also print every line the build prints")->excludes(quiet);
       return [flags] { return run_build(*flags); };
     }}};

}  // namespace
}  // namespace opforge::cli
