#include "compile/command/command_backend.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "compile/command/cmake_log.h"
#include "compile/command/op_schedule.h"
#include "compile/command/wheel_match.h"
#include "compile/compiler_cache/launcher.h"
#include "compile/scratch/scratch.h"
#include "compile/watch/compile_errors.h"
#include "compile/watch/step_watch.h"
#include "compile/wrap/environment.h"
#include "compile/wrap/toolkit_view.h"
#include "compile/wrap/wrap_command.h"
#include "compile/wrap/wrappers.h"
#include "compiler/flags.h"
#include "compiler/host.h"
#include "cuda/torch_stable.h"
#include "ops/deepspeed_version.h"
#include "ops/ops.h"
#include "plan/jobs.h"
#include "settings/child_env.h"
#include "settings/settings.h"
#include "util/strings.h"
#include "wheel/wheel.h"

namespace opforge::compile {

namespace fs = std::filesystem;

namespace {

/// The steps of a command build (each op compiled alone, then the command) for StepEvents.
struct StepCount {
  int done = 0;
  int total = 0;
};

/// Removes the scratch tree when the build is done with it, unless `keep` (a failed command's tree
/// stays for inspection until the next build of the same content).
struct ScratchCleanup {
  probe::FileSystem& fs;
  fs::path root;
  bool keep = false;
  ~ScratchCleanup() {
    if (keep) {
      // Its size with the build's outputs, for `opforge cache` (measured once, here).
      (void)probe::record_size(fs, root, probe::tree_bytes(fs, root));
      return;
    }
    (void)fs.remove_all(root);
    (void)fs.remove(probe::size_file(root));
  }
};

/// The nvcc wrapper a plan with a toolkit compiles through (written); empty without a toolkit.
Result<fs::path> prepare_nvcc_wrapper(probe::FileSystem& fs, const plan::Plan& plan, const fs::path& cache_dir,
                                      const HostWrappers* host) {
  if (!plan.cuda.chosen) return fs::path();
  auto w = plan_nvcc_wrapper(fs, plan, cache_dir, host);
  OPFORGE_CHECK(write_nvcc_wrapper(fs, w));
  return w.path;
}

/// `cmd` given the build's sccache session's variables (none: as it is), which name the server
/// SccacheSession::serve runs; its private paths stay out of out.env, the record's.
void through_sccache(probe::Command& cmd, const SccacheSession* sccache) {
  if (!sccache) return;
  // Every command of a build is given its whole environment already (run_command_backend).
  cmd.env = settings::ChildEnv(cmd.env.value_or(settings::ChildEnv::Vars{})).layer(sccache->env()).vars();
}

/// Runs [build] command in `out.tree` with `out.env`, its output into out.log; a command that ran
/// and failed sets `keep_tree`.
Status run_command(probe::Machine m, const plan::Plan& plan, CommandOutput& out, bool& keep_tree,
                   const std::function<void(std::string_view)>& on_line, const StepSink& on_step, StepCount& steps,
                   SccacheSession* sccache) {
  const auto& command = plan.recipe.build.command;
  const std::string what = strings::shell_join(command);
  if (on_step) on_step({StepEvent::Kind::started, what, steps.done, steps.total, -1, true});
  const auto start = std::chrono::steady_clock::now();
  probe::Command cmd;
  cmd.argv = command;
  cmd.cwd = out.tree;
  cmd.env = out.env;
  cmd.output = probe::Output::lines;
  cmd.on_line = [&](std::string_view line) {
    if (on_line) on_line(line);
  };
  cmd.timeout = plan.compile_timeout;
  through_sccache(cmd, sccache);
  // Each compile step's peak, for the summary, the record and the next build's job count: a
  // project's own steps (no ops) learned as they run, so that a build killed half-way (flash-attn
  // built over several sessions) has taught the next one already.
  const bool own_steps = std::none_of(plan.ops.begin(), plan.ops.end(), [](auto& d) { return d.builds(); });
  const fs::path cache_dir = settings::cache_dir(m.env);
  // What the wrappers leave on a command line: a CUDA step without any of them escaped the wrapper.
  std::vector<std::string> marks;
  if (!out.nvcc_wrapper.empty()) marks = {out.nvcc_wrapper.string(), std::string(kNvccCommand)};
  if (!out.toolkit_view.empty()) marks.push_back((out.toolkit_view / "bin" / "nvcc").string());
  StepWatchThread watch(
      m.fs, out.tree, 250,
      [&](std::uint64_t kib) {
        if (own_steps)
          plan::store_compile_peaks(m.fs, cache_dir, {{plan::steps_peak_key(plan.recipe.package.name), kib}});
      },
      marks);
  auto result = m.proc.run(cmd);
  out.step_peaks = watch.finish();
  if (!out.nvcc_wrapper.empty()) {
    const auto escaped = unwrapped_cuda_steps(out.step_peaks);
    out.unwrapped.insert(out.unwrapped.end(), escaped.begin(), escaped.end());
  }
  if (!result)
    return failure("cannot start the build command " + command.front() + ": " + result.error().message,
                   "check [build] command and that its program is on PATH");
  OPFORGE_CHECK(m.fs.write_file_atomic(out.log, result->out));
  if (on_step)
    on_step({StepEvent::Kind::finished, what, ++steps.done, steps.total,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), result->ok()});
  if (result->ok()) return {};
  keep_tree = true;
  std::string how = result->timed_out
                        ? "stopped after OPFORGE_COMPILE_TIMEOUT=" + std::to_string(plan.compile_timeout.count()) + " s"
                    : result->exit_code >= 0 ? "exit " + std::to_string(result->exit_code)
                                             : "signal " + std::to_string(result->signal);
  std::string said = "the build command failed (" + how + ") in " + out.tree.string();
  std::string hint = "full log: " + out.log.string();
  const std::string tail = log_tail(result->out, 25);
  // What says why first, the traceback after it: a project's setup.py ends in Python's traceback,
  // and the line that says why (CMake's error, ninja's missing input, the compiler's error) is
  // above it, often more than a tail's length above.
  if (auto cmake = first_cmake_error(result->out)) {
    if (tail.find(cmake->text) == std::string::npos) said += "; CMake stopped it:\n" + cmake->text + "\n...";
    if (!cmake->wants_cuda.empty() && plan.cuda.chosen)
      hint = "the project asks for CUDA " + cmake->wants_cuda + " and the plan's toolkit is " +
             plan.cuda.chosen->version.str() + " (" + plan.cuda.chosen->root.string() +
             "): set [cuda] version to one it accepts (`opforge doctor` lists the toolkits here)\n  " + hint;
  } else if (auto why = failure_reason(result->out, out.tree)) {
    said += ": " + *why;
  }
  return failure(said + "\nits last lines:\n" + tail, hint);
}

/// The torch the wheel's libraries need (the strongest of them, each file's evidence named) and the
/// Requires-Dist that follows: torch==X.Y.* of the torch built against for its C++ ABI,
/// torch>=X.Y for the stable C ABI alone, none without torch. None either when [wheel] torch_pin
/// is off, the plan pins torch already (a [matrix] cell), or the project's own METADATA pins it
/// exactly (==).
void torch_requirement_of(const probe::FileSystem& fs, const plan::Plan& plan, std::string_view raw,
                          CommandOutput& out) {
  auto entries = wheel::read_archive(raw);
  if (!entries) return;
  std::string project_torch;
  std::set<std::string> stable_symbols;
  for (const auto& e : *entries) {
    if (wheel::is_elf(e.content)) {
      auto info = wheel::read_elf(e.content);
      if (!info) continue;
      auto link = wheel::torch_linkage(*info);
      if (link.abi > out.torch_link.abi) out.torch_link = {link.abi, {}};
      if (link.abi == out.torch_link.abi && link.abi != wheel::TorchAbi::none)
        for (auto& sym : link.evidence)
          if (out.torch_link.evidence.size() < 3) out.torch_link.evidence.push_back(e.path + ": " + sym);
      stable_symbols.insert(link.stable_symbols.begin(), link.stable_symbols.end());
    } else if (e.path.ends_with(".dist-info/METADATA")) {
      for (auto& line : strings::split(e.content, '\n'))
        // Unconditional ones only: "torch>=2.0.0; extra == \"all\"" is no pin ("==" of a marker).
        if (strings::to_lower(line.substr(0, 14)) == "requires-dist:" &&
            wheel::requirement_name(strings::trim(line.substr(14))) == "torch" && line.find(';') == std::string::npos)
          project_torch = std::string(strings::trim(line.substr(14)));
    }
  }
  if (!plan.recipe.wheel.torch_pin || out.torch_link.abi == wheel::TorchAbi::none) return;
  if (!plan.cuda.torch || !plan.cuda.torch->torch_version) return;
  const std::string& built_with = *plan.cuda.torch->torch_version;
  if (project_torch.find("==") != std::string::npos && project_torch.find(".*") == std::string::npos) return;
  if (out.torch_link.abi == wheel::TorchAbi::stable) {
    // The oldest torch whose stable headers declare every function the libraries call; a matrix
    // cell's own pin gives way to it (normalize_options), which is what lets one wheel serve the
    // matrix's newer torches.
    out.torch_link.stable_symbols.assign(stable_symbols.begin(), stable_symbols.end());
    const auto abi = cuda::read_stable_abi(fs, plan.cuda.torch->torch_dir);
    const auto floor = cuda::stable_floor(abi, out.torch_link.stable_symbols);
    if (floor.release) {
      const std::string release = std::to_string(floor.release->first) + "." + std::to_string(floor.release->second);
      out.torch_requirement = "torch>=" + release;
      out.torch_floor_why = floor.decided_by + ": torch " + release + " and later";
    } else {
      out.torch_requirement = plan::torch_floor(built_with);
      out.torch_floor_why =
          floor.missing.empty()
              ? "torch's headers name no stable ABI release: the torch it was built with"
              : floor.missing + " is not declared in torch's stable headers: the torch it was built with";
    }
    return;
  }
  if (std::any_of(plan.requires_dist.begin(), plan.requires_dist.end(),
                  [](auto& r) { return wheel::requirement_name(r) == "torch"; }))
    return;
  out.torch_requirement = plan::torch_pin(built_with);
}

/// How the command's wheel is re-packed: the plan's epoch and version, torch pinned as its
/// libraries link it (torch_requirement_of), and DeepSpeed's installed-ops file read (into
/// `installed`) and given the wheel's version.
wheel::NormalizeOptions normalize_options(const plan::Plan& plan, const std::string& torch_requirement,
                                          std::vector<std::string>& installed) {
  const plan::WheelOptions w = plan::wheel_options(plan);
  wheel::NormalizeOptions opts;
  opts.source_date_epoch = w.source_date_epoch;
  if (!w.version.empty()) opts.version = w.version;
  opts.requires_dist = w.requires_dist;
  if (!torch_requirement.empty()) {
    // The linkage's requirement replaces the plan's (a matrix cell's torch==X.Y.* for a stable-ABI wheel).
    std::erase_if(opts.requires_dist, [](const std::string& r) { return wheel::requirement_name(r) == "torch"; });
    opts.requires_dist.push_back(torch_requirement);
  }
  // The project's bdist_wheel says linux_x86_64 whatever its files need: the tag states what they
  // need instead, and the recipe's glibc floor is checked on them.
  opts.retag = wheel::Spec::Retag::yes;
  opts.glibc_floor = w.glibc_floor;
  const std::string version = w.version;
  opts.rewrite = [&installed, version](const std::string& path,
                                       const std::string& content) -> std::optional<std::string> {
    if (path != ops::kDeepSpeedVersionFile) return std::nullopt;
    installed = ops::deepspeed_installed_ops(content);
    return version.empty() ? std::nullopt : std::optional<std::string>(ops::set_deepspeed_version(content, version));
  };
  return opts;
}

/// The environment of one op's compile process: only its build variable on, MAX_JOBS its grant,
/// and nvcc --threads when the grant has more slots than the op has units.
std::map<std::string, std::string> op_environment(const std::map<std::string, std::string>& base,
                                                  const plan::Plan& plan, const ops::Decision& op, const Grant& g) {
  settings::ChildEnv env(base);
  env.set("DS_BUILD_OPS", "0");
  for (const auto& other : plan.ops)
    if (!other.manifest.build_var.empty()) env.set(other.manifest.build_var, &other == &op ? "1" : "0");
  env.set("MAX_JOBS", std::to_string(g.jobs));
  const bool threads =
      !plan.cuda.chosen || compiler::accepts(compiler::Tool::nvcc, "--threads", plan.cuda.chosen->version);
  if (g.nvcc_threads > 1 && threads)
    env.append_flags("NVCC_APPEND_FLAGS", "--threads " + std::to_string(g.nvcc_threads));
  return std::move(env).vars();
}

/// Compiles one op alone in the tree; the step, or an error when the command could not start.
Result<OpStep> compile_op(probe::Machine m, const plan::Plan& plan, const std::vector<std::string>& build_ext,
                          const fs::path& tree, const std::map<std::string, std::string>& base_env,
                          const ops::Decision& d, const Grant& g, const fs::path& logs,
                          const std::function<void(std::string_view)>& on_line, SccacheSession* sccache) {
  probe::Command cmd;
  cmd.argv = build_ext;
  // Its own temporary folder: torch writes one build.ninja per folder, and ops compiled at the
  // same time must not share it. The libraries land in the shared build/lib*, where the wheel's
  // own build_ext finds them up to date.
  cmd.argv.insert(cmd.argv.end(), {"--build-temp", "build/opforge-temp/" + d.manifest.name});
  cmd.cwd = tree;
  cmd.env = op_environment(base_env, plan, d, g);
  cmd.output = probe::Output::lines;
  cmd.on_line = on_line;
  cmd.timeout = plan.compile_timeout;
  through_sccache(cmd, sccache);
  const auto start = std::chrono::steady_clock::now();
  auto result = m.proc.run(cmd);
  if (!result)
    return failure(
        "cannot start " + build_ext.front() + " to compile op " + d.manifest.name + ": " + result.error().message,
        "check [build] command and that its program is on PATH");
  OpStep step;
  step.op = d.manifest.name;
  step.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  step.peak_rss_kib = result->peak_rss_kib;
  step.log = logs / (d.manifest.name + ".log");
  OPFORGE_CHECK(m.fs.write_file_atomic(step.log, result->out));
  if (!result->ok()) {
    step.status = OpStatus::failed;
    step.first_error = first_compiler_error(result->out, tree);
  }
  return step;
}

/// Compiles each op the plan builds alone (only its build variable on) in `out.tree`, several at
/// once as op_schedule decides; records the steps in out.op_steps (plan order) and switches a
/// failed op off in out.env. A failed op that was requested explicitly fails the build (the tree
/// is kept): no further op starts, the running ones finish.
Status build_op_by_op(probe::Machine m, const plan::Plan& plan, const std::vector<std::string>& build_ext,
                      CommandOutput& out, bool& keep_tree, const std::function<void(std::string_view)>& on_line,
                      const StepSink& on_step, StepCount& steps, SccacheSession* sccache) {
  const fs::path logs = plan.build_dir / "ops";
  OPFORGE_CHECK(m.fs.create_directories(logs));
  std::vector<const ops::Decision*> built;  // the same order as op_work's
  for (const auto& d : plan.ops)
    if (d.builds()) built.push_back(&d);
  const auto work = op_work(plan.ops);
  const auto order = start_order(work);
  const unsigned slots = std::max(1u, plan.jobs);
  const bool several = slots > 1 && work.size() > 1;

  std::mutex mu;  // guards everything below and the calls of on_line
  std::condition_variable done;
  unsigned free = slots;
  bool stop = false;
  std::vector<std::optional<Result<OpStep>>> results(work.size());
  auto say = [&](std::string_view line) {
    if (on_line) on_line(line);
  };
  std::vector<std::jthread> running;
  {
    std::unique_lock lock(mu);
    for (std::size_t n = 0; n < order.size(); ++n) {
      done.wait(lock, [&] { return free > 0 || stop; });
      if (stop) break;
      const std::size_t i = order[n];
      const Grant g = grant_for(work[i], free, order.size() - n - 1, plan.arch.arches.size());
      free -= g.slots();
      say("opforge: compiling op " + work[i].op + " (MAX_JOBS " + std::to_string(g.jobs) +
          (g.nvcc_threads > 1 ? ", nvcc --threads " + std::to_string(g.nvcc_threads) : std::string()) + ")");
      if (on_step) on_step({StepEvent::Kind::started, "op " + work[i].op, steps.done, steps.total, -1, true});
      running.emplace_back([&, i, g] {
        const std::string prefix = several ? "[" + work[i].op + "] " : "";
        auto step = compile_op(
            m, plan, build_ext, out.tree, out.env, *built[i], g, logs,
            [&](std::string_view line) {
              std::lock_guard l(mu);
              say(prefix.empty() ? line : prefix + std::string(line));
            },
            sccache);
        std::lock_guard l(mu);
        if (on_step)
          on_step({StepEvent::Kind::finished, "op " + work[i].op, ++steps.done, steps.total, step ? step->seconds : -1,
                   step && step->status != OpStatus::failed});
        if (!step || (step->status == OpStatus::failed && built[i]->required)) stop = true;
        results[i] = std::move(step);
        free += g.slots();
        done.notify_all();
      });
    }
  }
  running.clear();  // joins

  for (std::size_t i = 0; i < work.size(); ++i) {
    if (!results[i]) continue;  // never started: a required op failed first
    if (!*results[i]) return opforge::unexpected(results[i]->error());
    OpStep& step = **results[i];
    const ops::Decision& d = *built[i];
    if (step.status == OpStatus::failed) {
      if (d.required) {
        keep_tree = true;
        return failure("op '" + d.manifest.name + "' (requested by " + d.requested_by + ") failed to compile:\n  " +
                           step.first_error,
                       "full log: " + step.log.string() + "; fix it, or do not request " + d.manifest.name + " (" +
                           d.manifest.build_var + "=0)");
      }
      out.env[d.manifest.build_var] = "0";
    }
    out.op_steps.push_back(std::move(step));
  }
  return {};
}

/// Python's temporary names made stable for the command (add_stable_temp_names): the folder emptied
/// first, since a killed build's leftovers would shift the names, and held by a lock until the
/// command ends. A build of the same content from another cache folder at the same time gets no
/// lock and keeps Python's random names (its wheel may hold a staging path the other's does not).
probe::LockAttempt stable_python_temp(probe::FileSystem& fs, const fs::path& tree, settings::ChildEnv& env,
                                      const std::function<void(std::string_view)>& on_line) {
  settings::ChildEnv one(settings::ChildEnv::Vars{});
  add_stable_temp_names(one, tree.filename().string());
  const fs::path folder = one.value(kPythonTempVariable);
  auto lock = fs.try_lock(folder.string() + ".lock");
  if (!lock || !*lock) {
    if (on_line)
      on_line("opforge: " + folder.string() + " is in use by another build (or cannot be locked): Python's " +
              "temporary names stay random in this one");
    return std::nullopt;
  }
  (void)fs.remove_all(folder);
  env.set(kPythonTempVariable, folder.string());
  return *lock;
}

}  // namespace

Result<CommandOutput> run_command_backend(probe::Machine m, const plan::Plan& planned, const CommandRun& run) {
  // sccache: the wrappers run every compile through it; one client server for every command of the
  // build (SccacheSession::serve). With build servers, as many compiles at once as they have CPUs.
  std::unique_ptr<SccacheSession> sccache;
  plan::Plan plan = planned;
  if (plan.cache == recipe::Cache::sccache) {
    auto setup = OPFORGE_TRY(sccache_setup(m, plan.recipe.build.scheduler, plan.recipe.build.scheduler_token_file));
    if (plan.host) setup.compiler = plan.host->compiler.cc;
    setup.error_log = plan.build_dir / "sccache-server.log";  // kept: a message may name it
    // The toolchains sccache packs for build servers: in opforge's cache, not in HOME.
    if (const auto cache = settings::cache_dir(m.env); !cache.empty()) setup.dist_cache = cache / "sccache-dist";
    sccache = OPFORGE_TRY(start_sccache(m, std::move(setup)));
    if (sccache->distributed() && plan.jobs_auto)
      plan.jobs = distributed_jobs(plan.jobs, sccache->scheduler().cpus, plan::available_memory_kib(m.fs));
  }
  const auto& on_line = run.on_line;
  const auto& on_step = run.on_step;
  if (plan.recipe.build.command.empty())
    return bad_input("[build] backend = \"command\" needs a command",
                     "e.g. command = [\"python3\", \"setup.py\", \"bdist_wheel\"]");
  CommandOutput out;
  out.log = plan.build_dir / "command.log";
  OPFORGE_CHECK(m.fs.create_directories(plan.build_dir));
  const fs::path cache_dir = settings::cache_dir(m.env);
  if (plan.host) OPFORGE_CHECK(compiler::check_shim(m.fs, *plan.host));
  // sccache: each compile through a launcher that hands it only the variables a compile needs.
  if (const auto program = wrapper_launcher(plan); !program.empty() && !cache_dir.empty())
    OPFORGE_CHECK(write_compile_launcher(m.fs, compile_launcher(cache_dir, program)));
  auto host = host_wrappers(m.fs, cache_dir, plan, wrapper_launch(plan, cache_dir));
  if (host) OPFORGE_CHECK(write_host_wrappers(m.fs, *host));
  const fs::path wrapper = OPFORGE_TRY(prepare_nvcc_wrapper(m.fs, plan, cache_dir, host ? &*host : nullptr));
  out.nvcc_wrapper = wrapper;
  // The toolkit as the project sees it: its bin/nvcc the wrapper (not for a cross-build, whose
  // toolkit folders are set up by set_cross).
  std::optional<ToolkitView> view;
  if (plan.cuda.chosen && !wrapper.empty() && !plan.cross())
    view = toolkit_view(m.fs, cache_dir, plan.cuda.chosen->root, wrapper);
  if (view) OPFORGE_CHECK(write_toolkit_view(m.fs, *view));
  const fs::path view_root = view ? view->root : fs::path();
  if (view) out.toolkit_view = view->root;
  const auto watch = network_watch(cache_dir);
  // A copy at a content-addressed path: never the source cache, never a stale build/. A tree that
  // a killed or failed build of the same content and compile commands left is resumed.
  const ScratchResume resume{[&](const fs::path& root) {
    settings::ChildEnv env(command_environment(settings::ChildEnv(m.env, settings::Child::command).vars(), plan, root,
                                               wrapper, host ? &*host : nullptr, view_root));
    add_watch_environment(env, watch, {});
    std::vector<std::string> also;
    for (auto& [k, v] : plan.exports) also.push_back(k);
    for (auto& [k, v] : plan.recipe.build.env) also.push_back(k);
    for (auto& [k, v] : plan.recipe.arch.env) also.push_back(k);
    return resume_key(plan.recipe.build.command,
                      {plan.cuda.torch ? plan.cuda.torch->torch_version_py_sha256 : std::string(),
                       plan.cuda.chosen ? plan.cuda.chosen->nvcc.string() : std::string()},
                      env.vars(), also);
  }};
  auto tree = OPFORGE_TRY(make_scratch_tree(m, plan.source.root, cache_dir, on_line, resume));
  out.tree = tree.root;
  out.tree_hash = tree.content_hash;
  out.resumed = tree.resumed;
  out.restored = tree.restored;
  ScratchCleanup scratch{m.fs, tree.root};
  if (on_line && tree.resumed)
    on_line("opforge: resuming the build tree an interrupted build left (" + tree.root.string() +
            "): its finished compile steps are kept" +
            (tree.restored ? "; " + std::to_string(tree.restored) + " changed source file(s) written again"
                           : std::string()));
  else if (on_line && !tree.not_why.empty())
    on_line("opforge: not resuming the build tree at " + tree.root.string() + ": " + tree.not_why + "; copied afresh");
  // A wheel a killed command had made already is not this run's.
  if (tree.resumed)
    for (auto& old : match_glob(m.fs, tree.root, plan.recipe.build.wheel_glob).value_or(std::vector<fs::path>{}))
      OPFORGE_CHECK(m.fs.remove(old));
  const NinjaLogs ninja_before = read_ninja_logs(m.fs, tree.root);
  settings::ChildEnv env(command_environment(settings::ChildEnv(m.env, settings::Child::command).vars(), plan,
                                             tree.root, wrapper, host ? &*host : nullptr, view_root));
  if (sccache) {
    // One server for every command (the ops compile at the same time, and sccache's disk cache
    // takes one server at a time), stopped before its counters are read.
    OPFORGE_CHECK(sccache->serve());
    out.sccache_said = sccache->said() + distributed_jobs_said(plan.jobs, planned.jobs);
  }
  // What the project asks nvcc for, whatever compiles in the end (the nvcc wrapper appends to it),
  // and what it fetches.
  // Kept in the tree, so that a resumed build's holds what the runs before it asked for too (the
  // steps they finished do not run again); copied into the build folder when the command is done.
  const fs::path arch_log = tree.root / ".opforge-nvcc-arch.log";
  if (!tree.resumed) (void)m.fs.remove(arch_log);
  OPFORGE_CHECK(write_network_watch(m.fs, watch));
  add_watch_environment(env, watch, wrapper.empty() ? fs::path() : arch_log);
  const auto temp_lock = stable_python_temp(m.fs, tree.root, env, on_line);
  out.env = std::move(env).vars();
  const fs::path pch_log = plan.build_dir / "pch.log";
  (void)m.fs.remove(pch_log);
  StepCount steps;
  steps.total = 1;  // the command
  if (plan.source.catalogue == plan::Catalogue::op_builder && build_ext_command(plan.recipe.build.command))
    steps.total +=
        static_cast<int>(std::count_if(plan.ops.begin(), plan.ops.end(), [](auto& d) { return d.builds(); }));
  if (plan.source.catalogue == plan::Catalogue::op_builder)
    if (auto build_ext = build_ext_command(plan.recipe.build.command)) {
      if (plan.pch) {
        // Every op's C++ files and flags, known before the first compiles (pch::kPlanFile).
        std::vector<pch::PlannedExtension> planned;
        for (const auto& d : plan.ops)
          if (d.builds() && !d.manifest.extension_name.empty()) {
            pch::PlannedExtension e{d.manifest.extension_name, d.manifest.host_args, {}};
            for (const auto& s : d.manifest.sources) e.sources.push_back(s.string());
            planned.push_back(std::move(e));
          }
        OPFORGE_CHECK(m.fs.write_file_atomic(tree.root / pch::kPlanFile, pch::plan_text(planned)));
      }
      OPFORGE_CHECK(build_op_by_op(m, plan, *build_ext, out, scratch.keep, on_line, on_step, steps, sccache.get()));
      // torch's BuildExtension with ninja sets build_ext.force and recompiles every extension in
      // its own build_temp, where the ops (compiled in their own temp folders) left nothing.
      // Without ninja, setuptools' own check finds each op's library newer than its sources and
      // skips it, so the command only packs. DeepSpeed's setup.py enables ninja when
      // DS_ENABLE_NINJA is set at all (even to "0"), hence erased.
      out.env.erase("DS_ENABLE_NINJA");
    }
  OPFORGE_CHECK(run_command(m, plan, out, scratch.keep, on_line, on_step, steps, sccache.get()));
  if (sccache) {
    sccache->stop();
    out.sccache = sccache->stats();
  }
  out.ninja_steps = compare_ninja_logs(ninja_before, read_ninja_logs(m.fs, tree.root));
  if (plan.pch) out.pch = pch::summarize(m.fs.read_file(pch_log).value_or(""));
  if (on_line && tree.resumed)
    on_line("opforge: resumed: " + std::to_string(out.ninja_steps.reused) + " of " +
            std::to_string(out.ninja_steps.reused + out.ninja_steps.compiled) + " compile steps reused, " +
            std::to_string(out.ninja_steps.compiled) + " compiled");
  if (auto asked = m.fs.read_file(arch_log)) {
    out.project_arch = project_arch_targets(*asked);
    out.nvcc_commands = static_cast<int>(std::count(asked->begin(), asked->end(), '\n'));
    (void)m.fs.write_file_atomic(plan.build_dir / "nvcc-arch.log", *asked);
  } else {
    (void)m.fs.remove(plan.build_dir / "nvcc-arch.log");
  }
  out.raw_wheel = OPFORGE_TRY(made_wheel(m.fs, tree.root, plan.recipe.build.wheel_glob, out.log));
  std::vector<std::string> installed;
  {
    auto raw = OPFORGE_TRY(m.fs.read_file(out.raw_wheel, wheel::Limits{}.archive_bytes));
    torch_requirement_of(m.fs, plan, raw, out);
  }
  auto written = OPFORGE_TRY(
      wheel::normalize(m, out.raw_wheel, run.wheel_dir, normalize_options(plan, out.torch_requirement, installed)));
  out.wheel = written.path;
  out.installed_ops = installed;
  return out;
}

}  // namespace opforge::compile
