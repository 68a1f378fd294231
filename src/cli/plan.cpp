// `opforge plan RECIPE`: the full resolved plan, written nowhere.
#include <iostream>

#include "cli/command.h"
#include "compile/command/command_backend.h"
#include "compile/compiler_cache/sccache.h"
#include "compile/native/native.h"
#include "compile/wrap/environment.h"
#include "compiler/host.h"
#include "devices/nodes.h"
#include "pipeline/kinds.h"
#include "plan/json.h"
#include "plan/plan.h"
#include "recipe/bundled.h"
#include "recipe/recipe.h"
#include "root/root.h"
#include "settings/settings.h"
#include "util/json.h"
#include "util/strings.h"

namespace opforge::cli {

namespace fs = std::filesystem;
namespace {

// The scratch tree's path depends on the tree's content, which plan does not read.
const char* kScratchPlaceholder = "<cache>/trees/<content hash>";

void print_toolchain(const plan::Plan& p) {
  std::cout << "platform      " << p.platform->name
            << (p.cross() ? " (cross-built on this " + std::string(target::host_platform().name) + " machine)"
                          : std::string(" (this machine)"))
            << "\n";
  std::cout << "CUDA toolkit  "
            << (p.cuda.chosen ? p.cuda.chosen->version.str() + " at " + p.cuda.chosen->root.string() : "none") << "\n";
  for (auto& c : p.cuda.candidates)
    std::cout << "  " << (c.chosen() ? "* " : "  ") << c.path.string()
              << (c.toolkit ? " (CUDA " + c.toolkit->version.str() + ", " +
                                  std::string(cuda::layout_name(c.toolkit->layout)) + ")"
                            : std::string())
              << " [" << c.found_by << "] " << c.said() << "\n";
  if (p.cuda.torch)
    std::cout << "  torch (" << p.cuda.torch->python << "): " << p.cuda.torch->torch_version.value_or("not installed")
              << ", CUDA " << (p.cuda.torch->cuda ? p.cuda.torch->cuda->str() : "none") << "\n";
  if (p.provision) {
    const auto& v = *p.provision;
    std::cout << "  provision   CUDA " << v.cuda.str() << " from PyPI in " << v.dir.string() << ": "
              << (v.present || v.fetched ? "cached, nothing to fetch"
                                         : "`opforge build` installs " + v.requirement + " (" + v.requirement_source +
                                               ") with " + v.python + " -m pip")
              << "\n";
  }
  if (p.cuda_target) {
    const auto& t = *p.cuda_target;
    std::cout << "  runtime     " << t.platform << " " << t.requirement << " in " << t.dir.string() << ": "
              << (t.present || t.fetched ? "cached, nothing to fetch"
                                         : "`opforge build` fetches it with " + t.python + " -m pip")
              << " (release from " << t.release_source << ")\n";
  }
  if (p.target_torch) {
    const auto& t = *p.target_torch;
    std::cout << "  torch       " << t.platform << " " << t.requirement << " (" << t.python_tag << ") in "
              << t.dir.string() << ": "
              << (t.present || t.fetched ? "cached, nothing to fetch"
                                         : "`opforge build` fetches it with " + t.python + " -m pip")
              << "\n";
  }
  std::cout << "host compiler ";
  if (p.host) {
    std::cout << p.host->compiler.cxx.string() << " " << p.host->compiler.version.str(3) << " — " << p.host->reason
              << "\n";
    if (p.host->shim_dir) std::cout << "  shim        " << p.host->shim_dir->string() << "\n";
    if (p.host->allow_unsupported) std::cout << "  nvcc flag   -allow-unsupported-compiler\n";
  } else {
    std::cout << "none (no CUDA op is built)\n";
  }
  std::cout << "architectures " << (p.arch.arches.empty() ? "none" : p.arch.str());
  if (!p.arch.source.empty()) std::cout << " (from " << p.arch.source << ")";
  std::cout << "\n";
  for (auto& [e, why] : p.arch.dropped) std::cout << "  dropped " << e << ": " << why << "\n";
  if (recipe::project_build(p.recipe) && p.cuda.chosen && !p.arch.arches.empty())
    std::cout << (p.recipe.arch.enforce
                      ? "  the project's own -gencode/-arch options are replaced by these ([arch] enforce = false "
                        "keeps them)\n"
                      : "  the project's own -gencode/-arch options are kept ([arch] enforce = false)\n");
}

void print_ops(const plan::Plan& p) {
  std::cout << "\nops\n";
  if (p.source.catalogue == plan::Catalogue::none)
    std::cout << "  (no op catalogue: the command decides what it builds)\n";
  std::size_t quiet = 0;
  for (auto& d : p.ops) {
    // A DeepSpeed tree lists two dozen builders: those nobody asked for are counted, not listed.
    if (p.source.catalogue == plan::Catalogue::op_builder && !d.requested()) {
      ++quiet;
      continue;
    }
    std::cout << "  " << strings::column(ops::status_name(d.status), 8) << d.manifest.name << " ("
              << ops::kind_name(d.manifest.kind) << ", " << d.requested_by << "): " << d.reason << "\n";
  }
  if (quiet) std::cout << "  (" << quiet << " more not requested; `opforge plan --json` lists them)\n";
}

/// compile::arch_channels as `plan --json` gives them: [{variable, value, reader}].
nlohmann::json arch_channels_json(const plan::Plan& p) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : compile::arch_channels(p))
    out.push_back({{"variable", c.variable}, {"value", c.value}, {"reader", c.reader}});
  return out;
}

/// The exports and what runs (the build kind's commands, pipeline/kinds.h): for a project's own
/// build, its full environment beyond the caller's (exactly what the build will set) and the ways
/// the arch list reaches it; for a native build, the plan's exports and ninja's commands.
void print_commands(const plan::Plan& p) {
  auto planned = pipeline::kind(p.recipe.build.backend).commands(probe::real_machine(), p, kScratchPlaceholder);
  if (!planned) {
    std::cout << "  (cannot describe: " << planned.error().message << ")\n";
    return;
  }
  for (auto& [k, v] : planned->environment) std::cout << "  " << k << "=" << strings::shell_quote(v) << "\n";
  if (const auto channels = compile::arch_channels(p); recipe::project_build(p.recipe) && !channels.empty()) {
    std::cout << "\narch list reaches the project through\n";
    for (const auto& c : channels)
      std::cout << "  " << c.variable << (c.variable == "CMAKE_ARGS" ? " += " : "=") << strings::shell_quote(c.value)
                << "  (" << c.reader << ")\n";
    if (p.recipe.arch.enforce)
      std::cout << "  nvcc wrapper: any other -gencode/-arch/--generate-code the project passes is replaced ([arch] "
                   "enforce)\n";
  }
  std::cout << "\n"
            << (recipe::project_build(p.recipe) ? "command " : "commands") << "      (" << planned->where << ")\n";
  for (std::size_t i = 0; i < planned->argv.size(); ++i) {
    std::cout << "  " << strings::shell_join(planned->argv[i]) << "\n";
    if (recipe::project_build(p.recipe) && !planned->description[i].empty())
      std::cout << "  " << planned->description[i] << "\n";
  }
}

/// cache = "sccache" with a scheduler: what it says of itself now; nothing otherwise.
std::optional<compile::SchedulerView> view_scheduler(const plan::Plan& p) {
  if (p.cache != recipe::Cache::sccache || p.recipe.build.scheduler.empty()) return std::nullopt;
  return compile::ask_scheduler(probe::real_machine(), p.recipe.build.scheduler, p.recipe.build.scheduler_token_file);
}

void print_text(const plan::Plan& p) {
  std::cout << "recipe        " << p.recipe.file.string() << "\n"
            << "source        " << p.source.root.string()
            << (p.source.commit.empty() ? std::string() : " @ " + p.source.commit + (p.source.dirty ? " (dirty)" : ""))
            << (p.source.not_fetched.empty() ? std::string()
                                             : "(not fetched: would fetch " + p.source.not_fetched + ")")
            << "\n";
  // A project without an op catalogue has no ops folder (the recipe's default names nothing there).
  if (!p.source.ops_dir.empty()) std::cout << "ops folder    " << p.source.ops_dir.string() << "\n";
  std::cout << "\n";
  print_toolchain(p);
  print_ops(p);
  std::cout << "\nwheel         " << p.recipe.package.name << " " << p.wheel_version << "\n"
            << "jobs          " << p.jobs << (p.jobs_reason.empty() ? "" : " (" + p.jobs_reason + ")") << "\n"
            << "cache         " << recipe::cache_kind(p.cache).name << "\n";
  if (auto v = view_scheduler(p)) std::cout << "  scheduler   " << v->said << "\n";
  if (recipe::project_build(p.recipe)) {
    std::cout << "pch           " << p.pch_why << "\n";
    if (!p.gcc_gc_why.empty()) std::cout << "gcc gc        " << p.gcc_gc_why << "\n";
    if (p.pch && p.host) {
      const std::string cxx = compiler::invocation(*p.host).cxx.string();
      const std::string entry = "<cache>/pch/<key>";
      std::cout << "  made once   " << cxx << " <FLAGS> -g0 -x c++-header " << entry << "/extension.h -o " << entry
                << "/extension.h.gch\n"
                << "  each file   " << cxx << " <FLAGS> -c FILE -o OBJ -include " << entry
                << "/extension.h -Winvalid-pch -g0\n"
                << "              (FLAGS: the compile's own less -c/-o/the file, -M*, -W*, -g*, link options,\n"
                << "              -DTORCH_EXTENSION_NAME, the project's include folders and its own macros;\n"
                << "              <key>: the compiler, FLAGS, torch and what a file reads before torch/extension.h,\n"
                << "              which the header holds first. Made once three compiles need the same one.\n"
                << "              Without it when a file has code, an #if or a macro-named include before the\n"
                << "              include, or when the compile with it fails.)\n";
    }
  }
  std::cout << "build dir     " << p.build_dir.string() << "\n"
            << "dist dir      " << p.dist_dir.string() << "\n"
            << "glibc floor   "
            << (p.recipe.wheel.glibc_floor
                    ? "2." + std::to_string(p.recipe.wheel.glibc_floor) + " (manylinux_2_" +
                          std::to_string(p.recipe.wheel.glibc_floor) + "): checked after the build"
                    : std::string("none: the build says what the wheel needs"))
            << "\n"
            << "\nexports\n";
  print_commands(p);
  if (!p.notes.empty()) {
    std::cout << "\nwhy\n";
    for (auto& n : p.notes) std::cout << "  " << n << "\n";
  }
  for (auto& w : p.warnings) std::cout << "warning: " << w << "\n";
}

/// --root / [wheel] root: the root's line, then the plan opforge makes inside it (nullopt: plan here).
template <typename Args>
Result<std::optional<Status>> plan_in_root(const Args& args) {
  auto m = probe::real_machine();
  if (settings::in_root(m.env)) return std::optional<Status>();
  // `default` names the bundled recipe, as it does for a plan here.
  const auto arg = recipe::resolve_recipe_arg(m.fs, args.recipe);
  std::optional<std::filesystem::path> dir;
  if (!args.root.empty()) dir = m.fs.absolute(args.root).lexically_normal();
  else if (auto r = recipe::load(m, arg.file); r && r->wheel.root) dir = *r->wheel.root;
  if (!dir) return std::optional<Status>();
  if (!args.nodes.empty()) return bad_input("--nodes and --root: give the node reports to the plan without --root");
  root::Invocation inv;
  inv.root = *dir;
  inv.command = "plan";
  inv.recipe = OPFORGE_TRY(m.fs.canonical(arg.file));
  if (args.json) inv.args.push_back("--json");
  if (!args.python.empty()) inv.args.insert(inv.args.end(), {"--python", args.python});
  if (args.jobs) inv.args.insert(inv.args.end(), {"-j", std::to_string(args.jobs)});
  if (args.no_pch) inv.args.push_back("--no-pch");
  if (!args.platform.empty()) inv.args.insert(inv.args.end(), {"--platform", args.platform});
  auto prepared = OPFORGE_TRY(root::prepare(m, inv));
  if (!args.json) std::cout << root::describe_line(prepared.info) << "\n\n" << std::flush;
  int code = OPFORGE_TRY(root::run(m, prepared.sandbox, prepared.jail, [](std::string_view line) {
    std::cout << line << "\n" << std::flush;
  }));
  if (code == 0) return std::optional<Status>(Status{});
  const ErrorKind kind = code == 2 ? ErrorKind::bad_input : code == 3 ? ErrorKind::unsatisfied : ErrorKind::failed;
  return std::optional<Status>(
      Status(fail(kind, "the plan inside the root " + dir->string() + " failed (exit " + std::to_string(code) + ")")));
}

Registrar plan_command{{
    "plan",
    "print the resolved build plan of a recipe and the exact commands (writes only its probe cache)",
    [](CLI::App& app) -> Runner {
      struct Args {
        std::string recipe;
        bool json = false;
        std::string python;
        unsigned jobs = 0;
        bool no_pch = false;
        std::vector<std::string> nodes;
        std::string root;
        std::string platform;
      };
      auto args = std::make_shared<Args>();
      app.add_option("recipe", args->recipe, "recipe file (TOML), or 'default' for the bundled default recipe")
          ->required();
      app.add_flag("--json", args->json, "print JSON");
      app.add_option("--python", args->python, "the Python whose torch decides the CUDA version");
      app.add_flag("--no-pch", args->no_pch, "plan without a precompiled torch header (as build --no-pch)");
      add_jobs_option(app, args->jobs, "parallel jobs");
      app.add_option("--nodes", args->nodes,
                     "`opforge doctor --json` reports of the cluster's nodes: their GPU kinds make the arch list");
      app.add_option("--platform", args->platform,
                     "the machine the wheel is for: x86_64 or aarch64 (beats [build] platform)");
      app.add_option("--root", args->root,
                     "plan the build inside this root filesystem (beats [wheel] root): the root's glibc, compilers "
                     "and Python, then the plan opforge makes there");
      return [args]() -> Status {
        if (auto inside = OPFORGE_TRY(plan_in_root(*args))) return *inside;
        plan::Options opts;
        if (!args->python.empty()) opts.python = args->python;
        if (args->jobs) opts.jobs = args->jobs;
        opts.no_pch = args->no_pch;
        if (!args->platform.empty()) opts.platform = args->platform;
        opts.inspect_source = [](probe::Machine m, const recipe::Recipe& r, const std::vector<fs::path>& own) {
          return plan::inspect_source(m, r, own, false);
        };
        opts.fetch_toolkit = false;  // plan says what a build would fetch, and fetches nothing
        auto real = probe::real_machine();
        std::vector<std::string> node_warnings;
        if (!args->nodes.empty()) {
          std::vector<std::filesystem::path> files(args->nodes.begin(), args->nodes.end());
          auto summary = OPFORGE_TRY(devices::merge_nodes(real.fs, files));
          if (summary.arch_list.empty())
            return unsatisfied("no GPU in any of the " + std::to_string(files.size()) + " node reports",
                               "run `opforge doctor --json` on nodes that have GPUs, or set [arch] list");
          opts.node_arch_list = summary.arch_list;
          node_warnings = summary.warnings;
        }
        const auto arg = recipe::resolve_recipe_arg(real.fs, args->recipe);
        opts.build_dir = arg.build_dir;
        opts.dist_dir = arg.dist_dir;
        auto p = OPFORGE_TRY(plan::make(real, arg.file, opts));
        if (opts.node_arch_list)
          p.notes.push_back("arch list from " + std::to_string(args->nodes.size()) +
                            " node reports: " + *opts.node_arch_list);
        for (auto& w : node_warnings) p.warnings.push_back(w);
        if (args->json) {
          auto j = plan::to_json(p);
          j["cache"] = recipe::cache_kind(p.cache).name;
          j["pch"] = {{"on", p.pch}, {"why", p.pch_why}};
          j["gcc_gc"] = {{"heap_kib", p.gcc_gc_heap_kib}, {"why", p.gcc_gc_why}};
          if (auto v = view_scheduler(p))
            j["scheduler"] = {
                {"url", v->url}, {"state", v->state}, {"servers", v->servers}, {"cpus", v->cpus}, {"said", v->said}};
          const auto planned = pipeline::kind(p.recipe.build.backend).commands(real, p, kScratchPlaceholder);
          if (planned && recipe::project_build(p.recipe)) {
            j["command"] = {{"argv", planned->argv.front()},
                            {"environment", planned->environment},
                            {"arch_enforced", p.recipe.arch.enforce},
                            {"arch_channels", arch_channels_json(p)},
                            {"build_env", p.recipe.build.env}};
          } else if (planned) {
            j["commands"] = nlohmann::json::array();
            for (std::size_t i = 0; i < planned->argv.size(); ++i)
              j["commands"].push_back({{"description", planned->description[i]}, {"argv", planned->argv[i]}});
          }
          std::cout << util::json_dump(j, 2) << "\n";
        } else print_text(p);
        // What `opforge build` would stop at before any work: the same error, the same exit code.
        std::cout.flush();
        return plan::check_tools(real, p);
      };
    },
}};

}  // namespace
}  // namespace opforge::cli
