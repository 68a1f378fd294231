/// The native backend's run (compile/native/native.h): build.ninja written, ninja run with opforge's
/// status format, the failed "auto" ops told apart, ccache's counters read back.
#include "compile/native/native.h"

#include <algorithm>

#include "compile/compiler_cache/compiler_cache.h"
#include "compile/compiler_cache/launcher.h"
#include "compile/watch/compile_errors.h"
#include "compile/wrap/wrappers.h"
#include "compiler/host.h"
#include "plan/jobs.h"
#include "probe/json_cache.h"
#include "settings/child_env.h"
#include "settings/settings.h"
#include "util/strings.h"

namespace opforge::compile {
namespace {

namespace fs = std::filesystem;

/// The ops whose steps ninja reports as FAILED (`FAILED: [code=N] <output>`), each with the first
/// compiler error of its part of the log; nullopt when a failed output belongs to no op.
std::optional<std::map<std::string, std::string>> failed_ops(const std::string& log, const fs::path& build,
                                                             const std::vector<OpOutputs>& outputs,
                                                             const fs::path& source_root) {
  std::map<std::string, std::string> out;
  std::string current;  // the op whose FAILED section is being read
  std::string section;
  auto close = [&] {
    if (!current.empty() && out[current].empty()) out[current] = first_compiler_error(section, source_root);
    section.clear();
  };
  for (auto line : strings::split(log, '\n')) {
    if (line.starts_with("FAILED: ")) {
      close();
      std::string path(strings::trim(line.substr(8)));
      if (path.starts_with("[code=")) path = std::string(strings::trim(path.substr(path.find(']') + 1)));
      current.clear();
      // ninja names the output as build.ninja does (absolute), or relative to the build folder.
      const fs::path absolute = fs::path(path).is_absolute() ? fs::path(path) : build / path;
      for (auto& o : outputs)
        if (absolute == o.library || absolute == o.extension ||
            absolute.string().starts_with((build / "obj" / o.op).string() + "/"))
          current = o.op;
      if (current.empty()) return std::nullopt;
      out.emplace(current, "");
      continue;
    }
    if (line.starts_with("ninja: build stopped")) continue;
    section += std::string(line) + "\n";
  }
  close();
  return out;
}

}  // namespace

Result<RunResult> run(probe::Machine m, const plan::Plan& plan, const RunOptions& options) {
  auto graph = OPFORGE_TRY(describe(plan));
  const bool ccache = plan.cache == recipe::Cache::ccache;
  if (ccache) {
    // docs/reference.md §5: every path relative (base_dir "/"), so hits cross folders; this build's
    // own counters in the stats log (the user's global ccache statistics are left alone).
    for (auto& [k, v] : ccache_environment({.base_dir = "/",
                        .remote = plan.recipe.build.remote,
                        .stats_log = plan.build_dir / "ccache-stats.log",
                        .depend_mode = false}))
      graph.env[k] = v;
    (void)m.fs.remove(plan.build_dir / "ccache-stats.log");
  }
  // sccache: a client server of this build's own, inside the ninja command (SccacheSession::wrap).
  std::unique_ptr<SccacheSession> session;
  if (plan.cache == recipe::Cache::sccache) {
    auto setup = OPFORGE_TRY(sccache_setup(m, plan.recipe.build.scheduler, plan.recipe.build.scheduler_token_file));
    if (plan.host) setup.compiler = plan.host->compiler.cc;
    setup.error_log = plan.build_dir / "sccache-server.log";  // kept: a message may name it
    // The toolchains sccache packs for build servers: in opforge's cache, not in HOME.
    if (const auto cache = settings::cache_dir(m.env); !cache.empty()) setup.dist_cache = cache / "sccache-dist";
    session = OPFORGE_TRY(start_sccache(m, std::move(setup)));
    for (auto& [k, v] : session->env()) graph.env[k] = v;
    // Each compile through the launcher that hands it only the variables a compile needs (`plan`
    // prints the program itself): its steps may run on a build server.
    const fs::path cache_dir = settings::cache_dir(m.env);
    const auto program = wrapper_launcher(plan);
    const auto launcher = compile_launcher(cache_dir.empty() ? plan.build_dir : cache_dir, program);
    OPFORGE_CHECK(write_compile_launcher(m.fs, launcher));
    for (auto& step : graph.steps)
      if (!step.argv.empty() && step.argv.front() == program) step.argv.front() = launcher.path.string();
  }
  OPFORGE_CHECK(m.fs.create_directories(plan.build_dir / "lib"));
  for (auto& o : graph.outputs) OPFORGE_CHECK(m.fs.create_directories(plan.build_dir / "obj" / o.op));
  if (plan.host) OPFORGE_CHECK(compiler::check_shim(m.fs, *plan.host));
  OPFORGE_CHECK(m.fs.write_file_atomic(plan.build_dir / "build.ninja", render_ninja(graph, plan.build_dir)));

  RunResult result;
  result.outputs = graph.outputs;
  if (graph.outputs.empty()) return result;
  // ninja's environment: the toolkit's search paths of the plan's exports (the compiles' other
  // variables are on their command lines), the graph's own (ccache's, the sccache session's).
  settings::ChildEnv env(m.env, settings::Child::command);
  env.layer(plan.exports, {"PATH", "LD_LIBRARY_PATH", "CUDA_HOME"}).layer(graph.env);
  // With an "auto" op in the build, one op's failure must not stop the others.
  const bool keep_going =
      std::any_of(plan.ops.begin(), plan.ops.end(), [](const ops::Decision& d) { return d.builds() && !d.required; });
  // ninja on a terminal reports each step as it starts, in opforge's own status format (a user's
  // NINJA_STATUS would change what is read back); TERM=dumb would make it print as in a pipe.
  env.set("NINJA_STATUS", kNinjaStatus);
  if (!settings::capable_terminal(m.env)) env.set("TERM", "vt100");
  std::string log;  // ninja's output as in a pipe: the finished steps and their output
  NinjaStatusReader reader(options.on_step, [&](std::string_view line) {
    log.append(line).push_back('\n');
    if (line.starts_with("[")) ++result.steps_run;
    if (options.on_line) options.on_line(line);
  });
  // Steps that go to build servers: as many at once as they have CPUs, unless the user said.
  unsigned jobs = std::max(1u, plan.jobs);
  if (session && session->distributed() && plan.jobs_auto)
    jobs = distributed_jobs(jobs, session->scheduler().cpus, plan::available_memory_kib(m.fs));
  probe::Command cmd{.argv = {"ninja", "-C", plan.build_dir.string(), "-j", std::to_string(jobs)},
                     .env = std::move(env).vars(),
                     .output = probe::Output::lines,
                     .on_line = [&](std::string_view line) { reader.line(line); },
                     .terminal = true};
  if (keep_going) cmd.argv.insert(cmd.argv.end(), {"-k", "0"});
  if (session) cmd.argv = session->wrap(cmd.argv);
  cmd.timeout = plan.compile_timeout;
  auto ran = m.proc.run(cmd);
  if (!ran) return opforge::unexpected(ran.error());
  if (ran->timed_out)
    return failure("the compile ran longer than " + std::to_string(plan.compile_timeout.count()) +
                       " s and was stopped (every process it started included)",
                   "a step that never ends (a compiler that hangs) is stopped at OPFORGE_COMPILE_TIMEOUT (seconds); "
                   "raise it for a larger build");
  result.log = log;
  result.peak_rss_kib = ran->peak_rss_kib;
  std::optional<std::map<std::string, std::string>> failed;
  if (!ran->ok() && keep_going) failed = failed_ops(log, plan.build_dir, graph.outputs, plan.source.root);
  const auto required = [&](const std::string& op) {
    return std::any_of(plan.ops.begin(), plan.ops.end(),
                       [&](const ops::Decision& d) { return d.manifest.name == op && d.required; });
  };
  if (failed && !failed->empty() &&
      std::none_of(failed->begin(), failed->end(), [&](auto& f) { return required(f.first); })) {
    std::erase_if(result.outputs, [&](const OpOutputs& o) { return failed->contains(o.op); });
    result.failed = std::move(*failed);
  } else if (!ran->ok()) {
    // ninja prints "FAILED: <out>", the command, then the compiler's output: show that part.
    auto pos = log.find("FAILED:");
    std::string detail = pos == std::string::npos ? log : log.substr(pos);
    return failure("a build step failed:\n" + detail,
                   "fix the error above and run `opforge build` again; finished steps are kept");
  }
  if (session) {
    result.sccache = session->stats();
    result.sccache_said = session->said() + distributed_jobs_said(jobs, plan.jobs);
  }
  if (ccache) {
    // Counter names are read only from a ccache that writes the ones parse_ccache_stats_log knows.
    auto v = probe::run_remembered(m, probe::Command{.argv = {"ccache", "--version"}});
    auto version = v && v->ok() ? parse_ccache_version(v->out) : std::nullopt;
    if (version && reads_stats_log(*version)) {
      auto log = m.fs.read_file(plan.build_dir / "ccache-stats.log");
      result.cache = parse_ccache_stats_log(log ? *log : "");
    }
  }
  return result;
}

}  // namespace opforge::compile
