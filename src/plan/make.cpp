#include <algorithm>
#include <charconv>
#include <chrono>

#include "compiler/cpu_target.h"
#include "compiler/host.h"
#include "cuda/mismatch.h"
#include "cuda/resolve.h"
#include "cuda/torch.h"
#include "ops/ops.h"
#include "plan/jobs.h"
#include "plan/plan.h"
#include "plan/provision_stage.h"
#include "probe/overlay_environment.h"
#include "settings/settings.h"
#include "util/numbers.h"
#include "util/pep440.h"
#include "util/strings.h"

namespace opforge::plan {
namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
}

using Env = std::map<std::string, std::string>;

/// CC, CXX and PATH for `host` (compiler::environment, the one rule), PATH continuing `ex`'s or the caller's.
Status add_compiler(probe::Machine m, const compiler::HostChoice& host, Env& ex) {
  std::string path = ex.count("PATH") ? ex["PATH"] : m.env.get("PATH").value_or("");
  for (auto& [k, v] : OPFORGE_TRY(compiler::environment(host, path))) ex[k] = v;
  return {};
}

/// Overrides::arch_from for --nodes.
constexpr const char* kFromNodes = "node reports";

/// The environment variables that override the recipe, each checked before anything is probed.
struct Overrides {
  std::string arch_list;              ///< the node reports', else TORCH_CUDA_ARCH_LIST, else the recipe's [arch] list
  std::string arch_from;              ///< which of the two
  std::optional<unsigned> max_jobs;   ///< MAX_JOBS, capped
  std::optional<std::int64_t> epoch;  ///< SOURCE_DATE_EPOCH
};

Result<Overrides> read_overrides(const probe::Environment& environment, const recipe::Recipe& r, const Options& opts,
                                 std::vector<std::string>& notes) {
  Overrides out;
  out.arch_list = r.arch.list;
  out.arch_from = "recipe [arch] list";
  if (opts.node_arch_list) {
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

/// The ops of the source tree and, for DeepSpeed's op_builder/, the tree that holds it (empty
/// otherwise). Sets source.catalogue (and source.ops_dir for op_builder/).
struct OpCatalogue {
  std::vector<ops::Manifest> manifests;
  fs::path ds_root;
};

Result<OpCatalogue> load_catalogue(probe::Machine m, const recipe::Recipe& r, SourceInfo& source,
                                   const std::string& python, bool command, std::vector<std::string>& notes) {
  OpCatalogue out;
  const bool explicit_ops_dir = r.locations.contains("source.ops_dir");
  const bool ops_dir_exists = m.fs.resolved_type(source.ops_dir) == probe::FileType::directory;
  if (!source.not_fetched.empty()) {
    source.catalogue = Catalogue::none;
    notes.push_back("source: not fetched yet (" + source.not_fetched +
                    "): `opforge build` fetches it; the op table and its verdicts need the tree");
    return out;
  }
  if (explicit_ops_dir && source.ops_dir.filename() == "op_builder" &&
      ops::has_op_builder(m.fs, source.ops_dir.parent_path()))
    out.ds_root = source.ops_dir.parent_path();
  else if (!explicit_ops_dir && !ops_dir_exists && ops::has_op_builder(m.fs, source.root)) out.ds_root = source.root;
  if (!out.ds_root.empty()) {
    if (!command)
      return bad_input("'" + (out.ds_root / "op_builder").string() +
                           "' holds DeepSpeed's op builders, which build through its own setup.py",
                       "set [build] backend = \"command\" (see docs/external-projects.md)");
    source.catalogue = Catalogue::op_builder;
    source.ops_dir = out.ds_root / "op_builder";
    out.manifests = OPFORGE_TRY(ops::load_deepspeed_catalogue(m, out.ds_root, python));
    notes.push_back("ops: " + std::to_string(out.manifests.size()) + " DeepSpeed op builders in " +
                    source.ops_dir.string());
  } else if (command && !explicit_ops_dir && !ops_dir_exists) {
    source.catalogue = Catalogue::none;
    notes.push_back("ops: no op catalogue in " + source.root.string() +
                    " (neither op.toml manifests nor op_builder/): the command decides what it builds");
  } else {
    out.manifests = OPFORGE_TRY(ops::load_manifests(m, source.ops_dir, source.root));
    notes.push_back("ops: " + std::to_string(out.manifests.size()) + " manifests in " + source.ops_dir.string());
  }
  return out;
}

fs::path cache_dir(probe::Machine m, const Options& opts);

/// Parallel jobs: -j, else MAX_JOBS, else the recipe's [build] jobs, else ("auto") as many as
/// both the cores and the available memory hold at the ops' expected peak per compile.
unsigned choose_jobs(probe::Machine m, const recipe::Recipe& r, const Options& opts, std::optional<unsigned> max_jobs,
                     const std::vector<ops::Decision>& decisions, std::vector<std::string>& notes, std::string& why) {
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
    auto fit =
        memory_aware_jobs(m.env.cpu_count(), available ? std::optional(available->kib) : std::nullopt, decisions,
                          load_compile_peaks(m.fs, cache_dir(m, opts)), cgroup ? available->from : std::string());
    jobs = fit.jobs;
    from = fit.why;
  }
  notes.push_back("jobs: " + std::to_string(jobs) + " (" + from + ")");
  why = from;
  return jobs;
}

/// SOURCE_DATE_EPOCH: the environment's, else the commit time, else 1980-01-01; never before
/// 1980-01-01 (a zip entry cannot hold an older time).
std::int64_t choose_epoch(std::optional<std::int64_t> env_epoch, const SourceInfo& source,
                          std::vector<std::string>& notes) {
  std::int64_t epoch = env_epoch ? *env_epoch : source.commit_time.value_or(wheel::kMinEpoch);
  if (epoch < wheel::kMinEpoch) {
    notes.push_back("SOURCE_DATE_EPOCH " + std::to_string(epoch) + " clamped to " + std::to_string(wheel::kMinEpoch) +
                    " (1980-01-01, the zip minimum)");
    return wheel::kMinEpoch;
  }
  notes.push_back("SOURCE_DATE_EPOCH: " + std::to_string(epoch) +
                  (env_epoch            ? " (environment)"
                   : source.commit_time ? " (commit time)"
                                        : " (default 1980-01-01)"));
  return epoch;
}

/// The recipe, with --release / --release-of applied as if it said so.
Result<recipe::Recipe> load_recipe(probe::Machine m, const fs::path& recipe_file, const Options& opts) {
  recipe::Recipe r = OPFORGE_TRY(recipe::load(m, recipe_file));
  if (opts.release) r.build.release = true;
  if (opts.release_commit) {
    r.build.release = true;
    r.build.release_commit = opts.release_commit;
  }
  return r;
}

/// The source tree and its ops folder, the build and dist folders, the project's Python.
Status place_source(probe::Machine m, const Options& opts, Plan& plan) {
  const recipe::Recipe& r = plan.recipe;
  plan.build_dir = opts.build_dir.value_or((r.dir / r.build.build_dir).lexically_normal());
  plan.dist_dir = opts.dist_dir.value_or((r.dir / r.build.dist_dir).lexically_normal());
  if (opts.inspect_source) {
    // opforge's own outputs inside the tree (the documented set-up: a recipe at the top of a git
    // checkout, build/ and dist/ beside it) must not make the next build's wheel "dirty".
    std::vector<fs::path> own{m.fs.absolute(plan.build_dir), m.fs.absolute(plan.dist_dir)};
    if (auto cache = cache_dir(m, opts); !cache.empty()) own.push_back(m.fs.absolute(cache));
    plan.source = OPFORGE_TRY(opts.inspect_source(m, r, own));
  } else {
    if (!r.source.path)
      return unsatisfied("[source] git needs the source stage, which is not part of this build",
                         "use [source] path = \"...\" with a checked-out tree");
    plan.source.root = *r.source.path;
  }
  if (plan.source.ops_dir.empty() && plan.source.not_fetched.empty())
    plan.source.ops_dir = (plan.source.root / r.source.ops_dir).lexically_normal();
  plan.python = opts.python.value_or(r.cuda.python);
  plan.cache = opts.cache.value_or(r.build.cache);
  return {};
}

fs::path cache_dir(probe::Machine m, const Options& opts) { return settings::cache_dir(m.env, opts.cache_dir); }

/// What the toolchain stages leave for the ops decision.
struct Toolchain {
  const cuda::Toolkit* tk = nullptr;  ///< plan.cuda.chosen, when a toolkit was found
  std::string unavailable;            ///< why CUDA ops cannot be built; empty when they can
  std::string fix;                    ///< how to make them buildable; empty: install a toolkit
  std::string probe_compiler;         ///< the C++ compiler the ops' probes run
};

/// torch's extension builder (what a command build compiles with) refuses a toolkit of another
/// CUDA major whatever DS_SKIP_CUDA_CHECK says; a minor difference is PyTorch's warning, and
/// DeepSpeed's stricter check (exact major.minor) is told through DS_SKIP_CUDA_CHECK=1.
Status check_torch_cuda(Plan& plan, const cuda::Toolkit& tk) {
  if (!plan.cuda.torch) return {};
  auto match = cuda::torch_match(*plan.cuda.torch, tk);
  if (match.mismatch == cuda::Mismatch::major && plan.recipe.build.backend == recipe::Backend::command) {
    const Version& tc = *plan.cuda.torch->cuda;
    return unsatisfied(match.message, "install CUDA " + std::to_string(tc.major) +
                                          ".x (or set CUDA_HOME to one), or a torch built for CUDA " +
                                          std::to_string(tk.version.major));
  }
  if (match.mismatch == cuda::Mismatch::minor) {
    plan.cuda_minor_mismatch = true;
    plan.warnings.push_back(match.message);
  }
  return {};
}

/// The toolkit. A missing one is not yet an error: only a CUDA op that is explicitly requested
/// makes it one (ops::decide).
Result<Toolchain> resolve_toolkit(probe::Machine m, const Options& opts, Plan& plan) {
  const recipe::Recipe& r = plan.recipe;
  Toolchain chain;
  chain.probe_compiler = r.compiler.host == "auto" ? "c++" : r.compiler.host;
  auto cuda = opts.resolvers.cuda(m, r.cuda.version, plan.python);
  if (auto got = OPFORGE_TRY(provision_toolkit(m, opts, plan, cuda))) {
    // The provisioned folder is looked at, and validated, like a toolkit CUDA_HOME names (torch,
    // read once already, is not read again: a Python start is most of a plan's time).
    probe::OverlayMachine named(m, {{"CUDA_HOME", got->dir.string()}});
    cuda = cuda::choose(cuda::discover(named.machine(), got->torch), r.cuda.version, named.machine().env);
    if (cuda) label_provisioned(*cuda, *plan.provision);
  }
  if (!cuda) {
    if (cuda.error().kind == ErrorKind::bad_input || cuda.error().names_user_setting)
      return opforge::unexpected(cuda.error());
    chain.unavailable = cuda.error().message;
    plan.notes.push_back("toolkit: none (" + chain.unavailable + ")");
    return chain;
  }
  plan.cuda = *cuda;
  // The resolver's own minor-mismatch warning is said again, in full, by check_torch_cuda.
  for (std::size_t i = 0; i < plan.cuda.warnings.size(); ++i)
    if (i != plan.cuda.minor_mismatch_warning) plan.warnings.push_back(plan.cuda.warnings[i]);
  if (!plan.cuda.chosen) {
    chain.unavailable = "no CUDA toolkit found";
    return chain;
  }
  chain.tk = &*plan.cuda.chosen;
  OPFORGE_CHECK(check_torch_cuda(plan, *chain.tk));
  plan.notes.push_back("toolkit: CUDA " + chain.tk->version.str() + " at " + chain.tk->root.string());
  return chain;
}

/// The host compiler nvcc accepts; none makes CUDA ops unavailable (bad_input stops the plan).
Status resolve_host(probe::Machine m, const Options& opts, Plan& plan, Toolchain& chain) {
  const recipe::Recipe& r = plan.recipe;
  auto host = opts.resolvers.host(m, *chain.tk, r.compiler.host, r.compiler.allow_unsupported, plan.build_dir / "shim");
  if (!host) {
    if (host.error().kind == ErrorKind::bad_input) return opforge::unexpected(host.error());
    chain.unavailable = "no host compiler that nvcc " + chain.tk->version.str() + " accepts: " + host.error().message;
    // The toolkit is there: the compiler is what to change.
    chain.fix = host.error().hint.empty() ? "set [compiler] host to a compiler nvcc " + chain.tk->version.str() +
                                                " accepts (`opforge doctor` lists them)"
                                          : host.error().hint;
    return {};
  }
  plan.host = *host;
  // The compiler itself: plan writes nothing, so the shim that links to it may not exist yet.
  chain.probe_compiler = host->compiler.cxx.string();
  plan.notes.push_back("host compiler: " + host->compiler.cxx.string() + " " + host->compiler.version.str(3) + " (" +
                       host->reason + ")");
  return {};
}

/// The GPU architectures (TORCH_CUDA_ARCH_LIST, else the recipe's), once toolkit and compiler are usable.
Status resolve_arch(probe::Machine m, const Options& opts, const Overrides& overrides, Plan& plan, Toolchain& chain) {
  if (!chain.unavailable.empty()) return {};
  const bool from_nodes = overrides.arch_from == kFromNodes;
  const bool from_env = from_nodes || overrides.arch_from == "TORCH_CUDA_ARCH_LIST";
  auto arch = opts.resolvers.arch(m, *chain.tk, overrides.arch_list, plan.recipe.arch.fallback);
  if (!arch) {
    if (arch.error().kind != ErrorKind::bad_input) {
      chain.unavailable = arch.error().message;
      return {};
    }
    Error e = arch.error();
    if (from_env) e.message = "TORCH_CUDA_ARCH_LIST: " + e.message;
    return opforge::unexpected(e);
  }
  plan.arch = *arch;
  if (from_env) plan.arch.source = overrides.arch_from;
  if (from_nodes) plan.arch.gpu_reader = "not read (the node reports decide)";
  else if (from_env) plan.arch.gpu_reader = "not read (TORCH_CUDA_ARCH_LIST is set)";
  plan.notes.push_back("arch list: " + plan.arch.str() + " (from " + plan.arch.source + ")");
  // An entry asked for and not built changes what the wheel serves: a warning in every command
  // (build printed nothing), and the record keeps it beside what was built (arch_dropped).
  for (auto& [entry, why] : plan.arch.dropped)
    plan.warnings.push_back("arch " + strings::cut(entry) + " (asked for by " + plan.arch.source + ") dropped: " + why);
  return {};
}

/// [build] cpu_target: every host compile goes through wrappers that pin -march
/// (compiler/cpu_target.h), kept in the cache folder so that every build folder shares them.
Status pin_cpu_target(probe::Machine m, const Options& opts, Plan& plan) {
  const recipe::Recipe& r = plan.recipe;
  if (r.build.cpu_target.empty()) return {};
  auto target = target::find_cpu_target(r.build.cpu_target);
  if (!target) return bad_input("unknown [build] cpu_target \"" + r.build.cpu_target + "\"");
  if (!plan.host) plan.host = OPFORGE_TRY(compiler::host_without_toolkit(m, r.compiler.host));
  const fs::path cache = cache_dir(m, opts);
  fs::path dir = compiler::wrapper_dir(m.fs, cache.empty() ? plan.build_dir : cache, plan.host->compiler, *target);
  plan.host = compiler::pin_cpu_target(*plan.host, dir, target->name);
  plan.notes.push_back("cpu target: " + target->name + " (-march=native becomes -march=" + target->name +
                       "; compilers wrapped in " + dir.string() + ")");
  return {};
}

/// [compiler] host names a compiler and no toolkit chose it (no toolkit, or nvcc refuses it): the
/// CPU code is still compiled with it, never silently with the default one; exit 3 when it is not
/// installed.
Status named_host_for_cpu_code(probe::Machine m, Plan& plan, Toolchain& chain) {
  const std::string host(strings::trim(plan.recipe.compiler.host));
  if (plan.host || host.empty() || host == "auto") return {};
  plan.host = OPFORGE_TRY(compiler::host_without_toolkit(m, host));
  plan.notes.push_back("host compiler: " + plan.host->compiler.cxx.string() + " " + plan.host->compiler.version.str(3) +
                       " ([compiler] host, for the CPU code)");
  chain.probe_compiler = plan.host->compiler.cxx.string();
  return {};
}

/// The toolkit and compiler a command build gets, worked out before the ops are decided:
/// DeepSpeed's is_compatible() runs in that environment. Empty when CUDA ops cannot be built.
Result<Env> toolkit_exports(probe::Machine m, const Options& opts, const Plan& plan, const Toolchain& chain) {
  Env ex;
  if (!chain.tk || !chain.unavailable.empty()) return ex;
  ex = opts.resolvers.cuda_exports(*chain.tk, m.env);
  ex["TORCH_CUDA_ARCH_LIST"] = plan.arch.str();
  if (plan.host) OPFORGE_CHECK(add_compiler(m, *plan.host, ex));
  if (plan.source.catalogue == Catalogue::op_builder) {
    // A GPU-less build machine must still build for the CUDA accelerator (DeepSpeed picks its CPU
    // accelerator when no GPU is visible).
    ex["DS_ACCELERATOR"] = "cuda";
    if (plan.cuda_minor_mismatch) ex["DS_SKIP_CUDA_CHECK"] = "1";
  }
  return ex;
}

/// DeepSpeed's own verdicts: is_compatible() of each op still in question, asked with the
/// project's Python in the environment a build gets (`toolkit`, on the caller's).
decltype(ops::DecideContext::compatibility) deepspeed_verdicts(probe::Machine m, const Plan& plan,
                                                               const fs::path& ds_root, const fs::path& cache,
                                                               const Env& toolkit) {
  auto env = m.env.all();
  for (auto& [k, v] : toolkit) env[k] = v;
  if (!env.contains("DS_ACCELERATOR")) env["DS_ACCELERATOR"] = "cuda";
  std::string torch_id =
      plan.cuda.torch ? plan.cuda.torch->torch_dir.string() + ":" + plan.cuda.torch->torch_version_py_sha256 : "";
  return [m, root = ds_root, python = plan.python, env, cache, torch_id](const std::vector<ops::Manifest>& ask) {
    return ops::deepspeed_compatibility(m, {root, python, ask, env, cache, torch_id});
  };
}

/// Every op of the catalogue, built or skipped, with why (the notes leave out DeepSpeed's
/// builders nobody asked for: it has two dozen).
Result<std::vector<ops::Decision>> decide_ops(probe::Machine m, const Options& opts, Plan& plan,
                                              const OpCatalogue& catalogue, const Toolchain& chain,
                                              const Env& toolkit) {
  const bool op_builder = plan.source.catalogue == Catalogue::op_builder;
  ops::DecideContext ctx;
  ctx.cuda_unavailable = chain.unavailable;
  ctx.cuda_fix = chain.fix;
  ctx.probe_compiler = chain.probe_compiler;
  ctx.cache_dir = cache_dir(m, opts);
  if (op_builder) {
    ctx.default_off = true;
    ctx.compatibility = deepspeed_verdicts(m, plan, catalogue.ds_root, ctx.cache_dir, toolkit);
  }
  auto decisions = OPFORGE_TRY(ops::decide(m, catalogue.manifests, plan.recipe, ctx));
  for (auto& d : decisions)
    if (d.requested || !op_builder)
      plan.notes.push_back("op " + d.manifest.name + ": " + (d.build ? "build" : "skip") + " — " + d.requested_by +
                           "; " + d.reason);
  return decisions;
}

/// Whether the wheel carries CUDA code: a CUDA op is built, or a command build has a usable
/// toolkit (its setup.py decides what it compiles).
bool carries_cuda(const Plan& plan, const Toolchain& chain) {
  if (plan.recipe.build.backend == recipe::Backend::command && chain.tk && chain.unavailable.empty()) return true;
  return std::any_of(plan.ops.begin(), plan.ops.end(),
                     [](const ops::Decision& d) { return d.build && ops::needs_toolkit(d.manifest.kind); });
}

/// DeepSpeed's version is version.txt + DS_BUILD_STRING: set so that its __version__ is the wheel's.
void deepspeed_version(probe::Machine m, Plan& plan, const fs::path& ds_root, Env& ex) {
  auto vt = m.fs.read_file(ds_root / "version.txt");
  if (!vt) return;
  std::string base(strings::trim(*vt));
  if (plan.wheel_version.starts_with(base) && plan.wheel_version.size() > base.size())
    ex["DS_BUILD_STRING"] = plan.wheel_version.substr(base.size());
  else if (plan.wheel_version != base)
    plan.notes.push_back("version: the recipe's " + plan.wheel_version + " differs from version.txt's " + base +
                         "; the wheel's files are rewritten to " + plan.wheel_version);
}

/// What `opforge env` prints and a command build gets: the toolkit's exports when CUDA code is
/// built (`toolkit`), the pinned CPU target's compiler otherwise, DeepSpeed's switches, and every
/// op's build variable.
Result<Env> build_exports(probe::Machine m, Plan& plan, const Env& toolkit, const fs::path& ds_root) {
  Env ex = toolkit;
  // A pinned CPU target reaches the compiler through the shim's wrappers, CUDA or not; a named
  // [compiler] host is the one the CPU code compiles with.
  if (plan.host && toolkit.empty() && (!plan.host->cpu_target.empty() || plan.recipe.compiler.host != "auto"))
    OPFORGE_CHECK(add_compiler(m, *plan.host, ex));
  if (plan.source.catalogue == Catalogue::op_builder) {
    // torch's BuildExtension uses ninja (and MAX_JOBS) only when DeepSpeed is told to.
    ex["DS_ENABLE_NINJA"] = "1";
    deepspeed_version(m, plan, ds_root, ex);
  }
  // Every op gets an explicit 1/0 and DS_BUILD_OPS=0, so a DeepSpeed-style build sees exactly
  // this op set whatever its own defaults are.
  ex["DS_BUILD_OPS"] = "0";
  for (auto& d : plan.ops) ex[d.manifest.build_var] = d.build ? "1" : "0";
  ex["MAX_JOBS"] = std::to_string(plan.jobs);
  ex["SOURCE_DATE_EPOCH"] = std::to_string(plan.source_date_epoch);
  return ex;
}

/// The project Python's header folder, for the built ops that have a [python_extension]: the
/// extension is compiled against the stable ABI, so the headers of any Python 3 at or above its
/// floor serve. Without them (no python3-dev, or an older Python), the extensions are left out
/// with a note (each has a Python fallback in its op's package, and the build's summary names
/// it); an op requested explicitly (true, DS_BUILD_<OP>=1) is built whole or not at all: unsatisfied.
Status find_python_include(probe::Machine m, Plan& plan) {
  std::vector<std::string> wanting, required;
  int floor = 0;
  for (auto& d : plan.ops)
    if (d.build && d.manifest.python_extension) {
      wanting.push_back(d.manifest.name);
      if (d.required) required.push_back(d.manifest.name + " (" + d.requested_by + ")");
      floor = std::max(floor, d.manifest.python_extension->floor_minor);
    }
  if (wanting.empty()) return {};
  const std::string which = "the Python extensions of " + strings::join(wanting, ", ");
  // The probe read_torch runs (remembered in the cache folder): no Python start on a repeated plan.
  const auto probe = cuda::read_python(m, plan.python);
  const int minor = probe && probe->version && probe->version->first == 3 ? probe->version->second : -1;
  const std::string dir = probe ? probe->include : std::string();
  std::string missing;
  if (minor >= 0 && minor < floor) {
    missing = plan.python + " is Python 3." + std::to_string(minor) + ", older than the stable-ABI floor 3." +
              std::to_string(floor);
  } else if (minor >= 0 && !dir.empty() && m.fs.resolved_type(fs::path(dir) / "Python.h") == probe::FileType::regular) {
    plan.python_include = dir;
    plan.notes.push_back("python headers: " + dir + " (" + which + ", stable ABI 3." + std::to_string(floor) + ")");
    return {};
  } else {
    missing = "not found for " + plan.python + " (install python3-dev)";
  }
  if (!required.empty())
    return unsatisfied("python headers: " + missing + ", and " + which + " cannot be built without them; " +
                           strings::join(required, ", ") + " asked for the whole op",
                       "install the Python headers for " + plan.python +
                           ": python3-dev (apt), python3-devel (dnf, yum), inside the root when building with --root; "
                           "or ask for the op with \"auto\" to build it without its extension");
  plan.notes.push_back("python headers: " + missing + ": " + which + " are left out, their Python code does the work");
  return {};
}

}  // namespace

Result<std::string> wheel_version(const recipe::Recipe& recipe, const cuda::Toolkit* toolkit, const SourceInfo& source,
                                  const std::optional<std::string>& torch_version) {
  const std::string& tmpl = recipe.package.local_version;
  if (tmpl == "none" || tmpl.empty()) return recipe.package.version;
  Location loc;
  if (auto it = recipe.locations.find("package.local_version"); it != recipe.locations.end()) loc = it->second;
  // Segments whose value is unknown are rewritten rather than left as placeholders: no toolkit
  // gives "cpu", no commit drops the segment.
  std::vector<std::string> segments;
  for (auto& seg : strings::split(tmpl, '.')) {
    std::string s(seg);
    if (s.find("{cuda_major}") != std::string::npos || s.find("{cuda_minor}") != std::string::npos) {
      if (!toolkit) {
        segments.push_back("cpu");
        continue;
      }
      replace_all(s, "{cuda_major}", std::to_string(toolkit->version.major));
      replace_all(s, "{cuda_minor}", std::to_string(toolkit->version.minor));
    }
    if (s.find("{torch_major}") != std::string::npos || s.find("{torch_minor}") != std::string::npos) {
      auto v = torch_version ? parse_version(torch_version->substr(0, torch_version->find('+'))) : std::nullopt;
      if (!v) continue;
      replace_all(s, "{torch_major}", std::to_string(v->major));
      replace_all(s, "{torch_minor}", std::to_string(v->minor));
    }
    if (s.find("{commit}") != std::string::npos) {
      if (source.commit.size() < 7) continue;
      replace_all(s, "{commit}", source.commit.substr(0, 7));
    }
    segments.push_back(s);
  }
  if (source.dirty && !source.commit.empty()) segments.push_back("dirty");
  std::string label = strings::join(segments, ".");
  if (label.empty()) return recipe.package.version;
  if (label.size() > 256 || !pep440::is_local_label(label)) {
    return bad_input("package.local_version gives the local version label '" + strings::cut(label) +
                         "', which is not [a-z0-9] segments separated by dots",
                     "use lower-case letters, digits and dots, e.g. \"cu{cuda_major}.g{commit}\", or \"none\"", loc);
  }
  return recipe.package.version + "+" + label;
}

/// OPFORGE_COMPILE_TIMEOUT: whole seconds, 60 to 604800 (a week); `fallback` when unset.
Result<std::chrono::seconds> read_compile_timeout(const probe::Environment& env, std::chrono::seconds fallback) {
  auto v = env.get("OPFORGE_COMPILE_TIMEOUT");
  if (!v || v->empty()) return fallback;
  auto n = numbers::parse_int<std::int64_t>(strings::trim(*v));
  if (!n || *n < 60 || *n > 604800)
    return bad_input("environment variable OPFORGE_COMPILE_TIMEOUT='" + strings::cut(*v) +
                         "' is not a number of seconds from 60 to 604800 (a week)",
                     "use e.g. OPFORGE_COMPILE_TIMEOUT=21600 (6 hours, the default), or unset it");
  return std::chrono::seconds(*n);
}

Result<Plan> make(probe::Machine machine, const fs::path& recipe_file, const Options& opts) {
  // Every child (DeepSpeed's compatibility probe, the build) sees the node reports' list as
  // TORCH_CUDA_ARCH_LIST; the arch resolver is handed it (read_overrides).
  std::map<std::string, std::string> overlay;
  if (opts.node_arch_list) overlay["TORCH_CUDA_ARCH_LIST"] = *opts.node_arch_list;
  // Options::cache_dir is every reader's cache folder (git clones, probe caches, wrappers).
  if (!opts.cache_dir.empty()) overlay["OPFORGE_CACHE_DIR"] = opts.cache_dir.string();
  probe::OverlayMachine seen(machine, std::move(overlay));
  const probe::Machine m = seen.machine();
  Plan plan;
  plan.recipe = OPFORGE_TRY(load_recipe(m, recipe_file, opts));
  const Overrides overrides = OPFORGE_TRY(read_overrides(m.env, plan.recipe, opts, plan.notes));
  OPFORGE_CHECK(probe::check_cache_dir(m.fs, m.env));
  plan.compile_timeout = OPFORGE_TRY(read_compile_timeout(m.env, plan.compile_timeout));
  OPFORGE_CHECK(place_source(m, opts, plan));
  const bool command = plan.recipe.build.backend == recipe::Backend::command;
  const OpCatalogue catalogue =
      OPFORGE_TRY(load_catalogue(m, plan.recipe, plan.source, plan.python, command, plan.notes));
  Toolchain chain = OPFORGE_TRY(resolve_toolkit(m, opts, plan));
  if (chain.tk) {
    OPFORGE_CHECK(resolve_host(m, opts, plan, chain));
    OPFORGE_CHECK(resolve_arch(m, opts, overrides, plan, chain));
  }
  OPFORGE_CHECK(pin_cpu_target(m, opts, plan));
  OPFORGE_CHECK(named_host_for_cpu_code(m, plan, chain));
  const Env toolkit = OPFORGE_TRY(toolkit_exports(m, opts, plan, chain));
  plan.ops = OPFORGE_TRY(decide_ops(m, opts, plan, catalogue, chain, toolkit));
  OPFORGE_CHECK(find_python_include(m, plan));
  const bool any_cuda = carries_cuda(plan, chain);
  plan.jobs = choose_jobs(m, plan.recipe, opts, overrides.max_jobs, plan.ops, plan.notes, plan.jobs_reason);
  if (const auto n = std::count_if(plan.ops.begin(), plan.ops.end(), [](const auto& d) { return d.build; });
      command && plan.source.catalogue == Catalogue::op_builder && n > 1 && plan.jobs > 1 &&
      std::any_of(plan.recipe.build.command.begin(), plan.recipe.build.command.end(),
                  [](const std::string& a) { return fs::path(a).filename() == "setup.py"; }))
    plan.notes.push_back("op compiles: one setup.py build_ext per op, up to " + std::to_string(plan.jobs) +
                         " at once, costliest first, their MAX_JOBS adding up to " + std::to_string(plan.jobs) +
                         " (setup.py alone compiles op after op)");
  plan.source_date_epoch = choose_epoch(overrides.epoch, plan.source, plan.notes);
  const auto torch_version = plan.cuda.torch ? plan.cuda.torch->torch_version : std::nullopt;
  plan.wheel_version =
      OPFORGE_TRY(wheel_version(plan.recipe, any_cuda ? chain.tk : nullptr, plan.source, torch_version));
  if (opts.pin_torch && torch_version)
    if (auto v = parse_version(torch_version->substr(0, torch_version->find('+')))) {
      plan.requires_dist.push_back("torch==" + v->str() + ".*");
      plan.notes.push_back("requires: torch==" + v->str() + ".* (the torch this wheel is built against)");
    }
  if (!any_cuda && chain.tk) plan.notes.push_back("wheel version: no CUDA op is built, so the label says cpu");
  plan.exports = OPFORGE_TRY(build_exports(m, plan, any_cuda && chain.tk ? toolkit : Env{}, catalogue.ds_root));
  return plan;
}

}  // namespace opforge::plan
