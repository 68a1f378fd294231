#include "pipeline/pipeline.h"

#include <set>
#include <tuple>

#include <algorithm>
#include <chrono>

#include "compile/command_backend.h"
#include "compiler/host.h"
#include "pipeline/dist.h"
#include "pipeline/wheelhouse.h"
#include "plan/jobs.h"
#include "settings/settings.h"

#include <fnmatch.h>

#include "opforge/version.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/strings.h"
#include "wheel/isa.h"
#include "wheel/wheel.h"

namespace opforge::pipeline {
namespace {

std::string compiler_text(const plan::Plan& plan) {
  if (!plan.host) return "";
  const auto& c = plan.host->compiler;
  return std::string(compiler::family_name(c.family)) + " " + c.version.str(3);
}

std::string long_description(const plan::Plan& plan, const std::vector<std::string>& built) {
  if (!plan.recipe.package.description.empty()) return plan.recipe.package.description;
  std::string d =
      "# " + plan.recipe.package.name + "\n\nPrebuilt ops, built by opforge " + std::string(kVersion) + ".\n\n";
  d += "- ops: " + (built.empty() ? std::string("none") : strings::join(built, ", ")) + "\n";
  if (plan.cuda.chosen) d += "- CUDA toolkit: " + plan.cuda.chosen->version.str() + "\n";
  if (!plan.arch.arches.empty()) d += "- GPU architectures: " + plan.arch.str() + "\n";
  d += "\nImport `opforge_ops`; `opforge_ops.build_info` says how this wheel was built.\n";
  return d;
}

nlohmann::json record_inputs(probe::Machine m, const plan::Plan& plan, const compile::Graph& graph,
                             const fs::path& recipe_file, const std::string& recipe_text) {
  nlohmann::json in;
  in["opforge_version"] = kVersion;
  in["recipe"] = {{"path", recipe_file.string()}, {"sha256", sha256_hex(recipe_text)}};
  in["source"] = {{"root", plan.source.root.string()},
                  {"commit", plan.source.commit},
                  {"dirty", plan.source.dirty},
                  {"release", plan.recipe.build.release}};
  if (plan.cuda.chosen) {
    auto& tk = *plan.cuda.chosen;
    in["toolkit"] = {{"root", tk.root.string()}, {"version", tk.version.str()}, {"nvcc_version", tk.nvcc_version_text}};
    if (plan.provision) {
      // Which wheels the toolkit came from, not where this machine keeps them: the folder is the cache's.
      auto p = util::json_parse(cuda::provision_json_text(*plan.provision));
      in["toolkit"]["provisioned"] = {{"requirement", p["requirement"]},
                                      {"requirement_source", p["requirement_source"]},
                                      {"packages", p["packages"]}};
    }
  }
  if (plan.host)
    in["compiler"] = {{"cxx", plan.host->compiler.cxx.string()},
                      {"version", compiler_text(plan)},
                      {"shim", plan.host->shim_dir ? plan.host->shim_dir->string() : ""}};
  in["arch_list"] = plan.arch.str();
  if (!plan.arch.dropped.empty()) {
    nlohmann::json dropped = nlohmann::json::object();
    for (auto& [entry, why] : plan.arch.dropped) dropped[entry] = why;
    in["arch_dropped"] = dropped;  // asked for, not built (only when there are some: fingerprints stay)
  }
  // the headers the ops' Python extensions were compiled against (stable ABI: any Python 3 from
  // their floor gives a working extension, but the bytes follow the headers)
  if (!plan.python_include.empty()) in["python_include"] = plan.python_include.string();
  if (!plan.recipe.build.cpu_target.empty()) in["cpu_target"] = plan.recipe.build.cpu_target;
  if (plan.recipe.wheel.glibc_floor) in["glibc_floor"] = "2." + std::to_string(plan.recipe.wheel.glibc_floor);
  in["source_date_epoch"] = plan.source_date_epoch;
  nlohmann::json ops = nlohmann::json::object();
  for (auto& o : graph.outputs) ops[o.op] = {{"flags", o.flags}};
  in["ops"] = ops;
  nlohmann::json env = nlohmann::json::object();
  for (auto& [k, v] : m.env.all())
    if (record::recorded_variable(k)) env[k] = v;
  in["environment"] = env;
  return in;
}

/// sha256 over everything that decides the wheel's bytes: the recorded inputs and every file.
std::string fingerprint(const wheel::Spec& spec, const nlohmann::json& inputs) {
  std::string text = util::json_dump(inputs) + "\n" + spec.name + "\n" + spec.version + "\n" + spec.summary + "\n" +
                     spec.description + "\n" + spec.requires_python + "\n" + std::to_string(spec.source_date_epoch);
  for (auto& f : spec.files) text += "\n" + f.path + " " + std::to_string(f.mode) + " " + sha256_hex(f.content);
  return sha256_hex(text);
}

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

/// With a cpu_target: the ELF files checked against it (the CPU target section of docs/recipe.md). A file may
/// exceed the target when [build] cpu_dispatch names it, or, for a native op, by the ISA flags its
/// op.toml gives single sources (those files are compiled for one SIMD level by design and the op
/// picks one at run time).
Status check_cpu_target(const plan::Plan& plan, const std::vector<std::pair<std::string, std::string_view>>& files,
                        const std::map<std::string, std::string>& op_of_path) {
  if (plan.recipe.build.cpu_target.empty()) return {};
  auto target = target::find_cpu_target(plan.recipe.build.cpu_target);
  if (!target) return bad_input("unknown [build] cpu_target \"" + plan.recipe.build.cpu_target + "\"");
  auto allowance = [&](const std::string& path) {
    wheel::IsaAllowance a;
    for (const auto& glob : plan.recipe.build.cpu_dispatch)
      if (::fnmatch(glob.c_str(), path.c_str(), 0) == 0) {
        a.everything = true;
        a.why = "[build] cpu_dispatch \"" + glob + "\"";
        return a;
      }
    auto op = op_of_path.find(path);
    if (op == op_of_path.end()) return a;
    for (const auto& d : plan.ops) {
      if (d.manifest.name != op->second) continue;
      std::vector<std::string> flags;
      for (const auto& [source, f] : d.manifest.source_flags) flags.insert(flags.end(), f.begin(), f.end());
      a.families = target::families_of_flags(flags);
      a.why = "op " + d.manifest.name + ": per-file ISA flags in op.toml [source_flags]";
    }
    return a;
  };
  auto checks = OPFORGE_TRY(wheel::check_cpu_target(files, *target, allowance));
  return wheel::require_cpu_target(checks, *target);
}

/// What a finished wheel needs of the system; nullopt when it holds no ELF file (or cannot be read,
/// which verify reports elsewhere).
std::optional<wheel::WheelNeeds> needs_of(std::string_view bytes) {
  auto needs = wheel::wheel_needs(bytes);
  if (!needs || !needs->has_elf) return std::nullopt;
  return *needs;
}

/// The wheel's tags from its file name (name-version[-build]-python-abi-platform.whl).
std::vector<std::string> tags_of(const fs::path& wheel) {
  auto parts = strings::split(wheel.stem().string(), '-');
  if (parts.size() < 5) return {};
  return {parts[parts.size() - 3] + "-" + parts[parts.size() - 2] + "-" + parts.back()};
}

/// A command build's wheel checked against the recipe's cpu_target. A refused wheel stays in the
/// build folder (never in dist/) to be inspected.
Status check_command_wheel(const plan::Plan& plan, std::string_view bytes, const fs::path& wheel) {
  if (plan.recipe.build.cpu_target.empty()) return {};
  auto entries = OPFORGE_TRY(wheel::read_archive(bytes));
  std::vector<std::pair<std::string, std::string_view>> files;
  for (const auto& e : entries) files.emplace_back(e.path, e.content);
  if (auto checked = check_cpu_target(plan, files, {}); !checked) {
    Error e = checked.error();
    e.hint += "; the refused wheel is " + wheel.string() + " (`opforge inspect` it)";
    return opforge::unexpected(e);
  }
  return {};
}

/// The GPU targets inside the wheel's ELF files ("sm_90", "compute_90"), sorted.
std::vector<std::string> wheel_gpu_targets(std::string_view bytes) {
  std::set<std::string> out;
  auto entries = wheel::read_archive(bytes);
  if (!entries) return {};
  for (const auto& e : *entries)
    if (wheel::is_elf(e.content))
      if (auto info = wheel::read_elf(e.content))
        for (const auto& img : info->fatbin)
          if (img.kind != wheel::FatbinImage::Kind::unknown) out.insert(img.name());
  std::vector<std::string> v(out.begin(), out.end());
  std::sort(v.begin(), v.end(), [](const std::string& a, const std::string& b) {
    auto key = [](const std::string& t) { return std::make_tuple(t.starts_with("compute_"), t.size(), t); };
    return key(a) < key(b);
  });
  return v;
}

/// What a command build's record holds beyond record_inputs: the command, its log, the tree it ran
/// in, the ops decided (and, DeepSpeed, those its installed-ops record lists: setup.py may add
/// dependencies, async_io brings pin_memory), torch, and the environment beyond the caller's.
nlohmann::json command_inputs(probe::Machine m, const plan::Plan& plan, const compile::CommandOutput& out,
                              const fs::path& recipe_file, const std::string& recipe_text) {
  nlohmann::json in = record_inputs(m, plan, compile::Graph{}, m.fs.absolute(recipe_file), recipe_text);
  in["command"] = plan.recipe.build.command;
  in["command_log"] = out.log.string();
  in["build_tree"] = {{"path", out.tree.string()}, {"content_sha256", out.tree_hash}};
  in["catalogue"] = plan::catalogue_name(plan.source.catalogue);
  nlohmann::json ops = nlohmann::json::object();
  for (auto& d : plan.ops)
    if (d.build) ops[d.manifest.name] = {{"kind", ops::kind_name(d.manifest.kind)}, {"requested_by", d.requested_by}};
  in["ops"] = ops;
  if (plan.source.catalogue == plan::Catalogue::op_builder) in["ops_installed"] = out.installed_ops;
  if (plan.cuda.torch && plan.cuda.torch->torch_version)
    in["torch"] = {{"version", *plan.cuda.torch->torch_version},
                   {"cuda", plan.cuda.torch->cuda ? plan.cuda.torch->cuda->str() : ""},
                   {"python", plan.cuda.torch->python},
                   {"requirement", compile::torch_requirement(*plan.cuda.torch->torch_version)}};
  nlohmann::json cenv = nlohmann::json::object();
  for (auto& [k, v] : out.env) {
    auto base = m.env.get(k);
    if (!base || *base != v) cenv[k] = v;
  }
  in["command_environment"] = cenv;
  if (!plan.recipe.build.env.empty()) in["build_env"] = plan.recipe.build.env;
  return in;
}

/// The cache folder (settings::cache_dir): compile peaks, scratch trees, wrappers.
fs::path cache_dir(probe::Machine m, const Options& options) {
  return settings::cache_dir(m.env, options.plan.cache_dir);
}

/// Marks the plan's ops whose own compile step failed as not built, with the first error.
void apply_op_steps(plan::Plan& plan, const std::vector<compile::OpStep>& steps) {
  for (auto& step : steps) {
    if (step.status != compile::OpStatus::failed) continue;
    for (auto& d : plan.ops)
      if (d.manifest.name == step.op) {
        d.build = false;
        d.failed = true;
        d.reason = "failed: " + step.first_error + (step.log.empty() ? "" : " (log: " + step.log.string() + ")");
      }
  }
}

nlohmann::json summary_json(const std::vector<OpSummaryLine>& lines) {
  nlohmann::json out = nlohmann::json::array();
  for (auto& l : lines) {
    nlohmann::json j = {{"op", l.op}, {"status", l.status}, {"reason", l.reason}};
    if (l.seconds >= 0) j["seconds"] = static_cast<double>(static_cast<long>(l.seconds * 10 + 0.5)) / 10;
    out.push_back(std::move(j));
  }
  return out;
}

/// A setup.py-style project builds its own wheel; opforge sets the environment, then
/// normalises the wheel (into the build folder) and commits it with its record.
Result<Outcome> build_with_command(probe::Machine m, Outcome outcome, const fs::path& recipe_file,
                                   const std::string& recipe_text, const Options& options) {
  const plan::Plan& plan = outcome.plan;
  plan::Plan staged = plan;
  staged.dist_dir = plan.build_dir / "normalized";
  auto out =
      OPFORGE_TRY(compile::run_command_backend(m, staged, options.on_line, cache_dir(m, options), options.on_step));
  apply_op_steps(outcome.plan, out.op_steps);
  {
    std::map<std::string, std::uint64_t> peaks;
    for (auto& step : out.op_steps)
      if (step.status == compile::OpStatus::built && step.peak_rss_kib > 0)
        peaks[step.op] = static_cast<std::uint64_t>(step.peak_rss_kib);
    plan::store_compile_peaks(m.fs, cache_dir(m, options), peaks);
  }
  outcome.op_steps = out.op_steps;
  auto bytes = OPFORGE_TRY(m.fs.read_file(out.wheel));
  OPFORGE_CHECK(check_command_wheel(plan, bytes, out.wheel));
  outcome.project_arch = out.project_arch;
  outcome.compiled_arch = wheel_gpu_targets(bytes);
  outcome.wheel = plan.dist_dir / out.wheel.filename();
  outcome.wheel_sha256 = sha256_hex(bytes);
  outcome.needs = needs_of(bytes);
  outcome.steps_run = 1;
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

/// What goes into the wheel besides the package: the op libraries (their hashes into `hashes`) and
/// build_info.py, checked against the recipe's cpu_target, sorted by path.
Result<std::vector<wheel::File>> wheel_files(probe::Machine m, const plan::Plan& plan, const compile::RunResult& ran,
                                             const fs::path& package, wheel::BuildInfo& info,
                                             std::map<std::string, std::string>& hashes) {
  auto files = OPFORGE_TRY(wheel::collect_files(m.fs, package, "opforge_ops"));
  std::erase_if(files, [](const wheel::File& f) { return f.path == "opforge_ops/build_info.py"; });
  info.opforge_version = kVersion;
  info.package_version = plan.wheel_version;
  info.toolkit_version = plan.cuda.chosen ? plan.cuda.chosen->version.str() : "";
  info.host_compiler = compiler_text(plan);
  info.source_commit = plan.source.commit;
  bool any_cuda = false;
  for (auto& o : ran.outputs) {
    auto bytes = OPFORGE_TRY(m.fs.read_file(o.library));
    files.push_back({"opforge_ops/_lib/" + o.library.filename().string(), bytes, 0755});
    hashes[o.library.filename().string()] = sha256_hex(bytes);
    if (!o.extension.empty()) {
      auto ext = OPFORGE_TRY(m.fs.read_file(o.extension));
      files.push_back({"opforge_ops/_lib/" + o.extension.filename().string(), ext, 0755});
      hashes[o.extension.filename().string()] = sha256_hex(ext);
    }
    info.ops.push_back(o.op);
    for (auto& d : plan.ops)
      if (d.manifest.name == o.op) {
        bool cuda_op = d.manifest.kind == ops::Kind::cuda;
        any_cuda |= cuda_op;
        info.op_kinds[o.op] = cuda_op ? "cuda" : "cpu";
      }
  }
  if (any_cuda)
    for (auto& a : plan.arch.arches) info.arch_list.push_back(a.str());
  // Which variable asks for each op (what opforge_ops names when an op is missing), and why each
  // built op is in the wheel: recipe and environment facts, the same on every machine.
  for (auto& d : plan.ops) {
    info.build_vars[d.manifest.name] = d.manifest.build_var;
    if (d.build && !d.requested_by.empty()) info.notes[d.manifest.name].push_back("requested by: " + d.requested_by);
  }
  std::vector<std::pair<std::string, std::string_view>> elfs;
  std::map<std::string, std::string> op_of_path;
  for (auto& o : ran.outputs) {
    op_of_path["opforge_ops/_lib/" + o.library.filename().string()] = o.op;
    if (!o.extension.empty()) op_of_path["opforge_ops/_lib/" + o.extension.filename().string()] = o.op;
  }
  for (auto& f : files) elfs.emplace_back(f.path, f.content);
  OPFORGE_CHECK(check_cpu_target(plan, elfs, op_of_path));
  files.push_back({"opforge_ops/build_info.py", OPFORGE_TRY(wheel::build_info_py(info)), 0644});
  std::sort(files.begin(), files.end(), [](auto& a, auto& b) { return a.path < b.path; });
  return files;
}

/// The summary's row for a finished build.
SummaryRow summary_row(const Outcome& done, const std::string& cell, std::chrono::steady_clock::duration took) {
  const plan::Plan& plan = done.plan;
  SummaryRow row;
  row.cell = cell.empty() ? "default" : cell;
  row.wheel = done.wheel.filename().string();
  row.sha256 = done.wheel_sha256;
  for (auto& d : plan.ops)
    if (d.build) row.ops.push_back(d.manifest.name);
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

wheel::Spec wheel_spec(const plan::Plan& plan, const wheel::BuildInfo& info, std::vector<wheel::File> files) {
  wheel::Spec spec;
  spec.name = plan.recipe.package.name;
  spec.version = plan.wheel_version;
  spec.summary = plan.recipe.package.summary;
  spec.description = long_description(plan, info.ops);
  spec.requires_python = plan.recipe.package.requires_python;
  spec.files = std::move(files);
  spec.source_date_epoch = plan.source_date_epoch;
  spec.glibc_floor = plan.recipe.wheel.glibc_floor;
  // the floor of the stable-ABI extensions the wheel holds (wheel::abi_tag names its tag)
  for (auto& d : plan.ops)
    if (d.manifest.python_extension) {
      const std::string path = "opforge_ops/_lib/" + d.manifest.python_extension->file_name();
      if (std::any_of(spec.files.begin(), spec.files.end(), [&](auto& f) { return f.path == path; }))
        spec.abi3_floor_minor = std::max(spec.abi3_floor_minor, d.manifest.python_extension->floor_minor);
    }
  return spec;
}

/// Packs `spec` and commits it with `rec` into dist/, unless an intact wheel made from exactly
/// these inputs (rec.inputs' fingerprint) is there already: a no-op rebuild keeps it.
Result<Outcome> commit_or_reuse(probe::Machine m, Outcome outcome, const wheel::Spec& spec, record::Record rec,
                                const Options& options) {
  const plan::Plan& plan = outcome.plan;
  const auto name = OPFORGE_TRY(wheel::file_name(spec));
  auto dist_lock = OPFORGE_TRY(lock_dist(m, plan.dist_dir, options.on_line));
  // A kill of another build may have left a commit half-done since this build started.
  OPFORGE_CHECK(recover_dist(m, plan.dist_dir));
  if (auto reused = find_reusable(m, plan.dist_dir, name, rec.inputs["fingerprint"].get<std::string>())) {
    outcome.wheel = reused->first;
    outcome.record = reused->second;
    outcome.wheel_sha256 = outcome.record.outputs[outcome.record.wheel];
    outcome.record_path = record::path_for(outcome.wheel);
    outcome.tags = tags_of(outcome.wheel);
    if (auto bytes = m.fs.read_file(outcome.wheel)) outcome.needs = needs_of(*bytes);
    outcome.reused = true;
    return outcome;
  }
  auto packed = OPFORGE_TRY(wheel::pack(spec));
  outcome.wheel = plan.dist_dir / packed.filename;
  outcome.wheel_sha256 = packed.sha256;
  outcome.tags = packed.tags;
  outcome.needs = needs_of(packed.bytes);
  outcome.platform_reason = strings::join(packed.platform.reasons, "; ");
  rec.wheel = packed.filename;
  rec.outputs[rec.wheel] = packed.sha256;
  outcome.record_path = record::path_for(outcome.wheel);
  OPFORGE_CHECK(commit(m, outcome.wheel, packed.bytes, rec));
  outcome.record = std::move(rec);
  return outcome;
}

/// The native backend compiles the ops; the wheel is the pure-Python package, the op libraries
/// and build_info.py.
Result<Outcome> build_native(probe::Machine m, Outcome outcome, const fs::path& recipe_file,
                             const std::string& recipe_text, const Options& options) {
  const plan::Plan& plan = outcome.plan;
  compile::RunOptions run_options;
  run_options.on_line = options.on_line;
  run_options.on_step = options.on_step;
  auto ran = OPFORGE_TRY(compile::run(m, plan, run_options));
  // "auto" ops whose compile failed are left out, as if skipped: the wheel, build_info and the
  // record then name the same ops.
  for (auto& [op, error] : ran.failed)
    outcome.op_steps.push_back(
        {.op = op, .status = compile::OpStatus::failed, .first_error = error, .log = {}, .seconds = -1});
  apply_op_steps(outcome.plan, outcome.op_steps);
  auto graph = OPFORGE_TRY(compile::describe(plan));
  if (ran.steps_run > 0) {  // ninja's largest compile stands for each op it built
    std::map<std::string, std::uint64_t> peaks;
    for (auto& d : plan.ops)
      if (d.build) peaks[d.manifest.name] = static_cast<std::uint64_t>(std::max(0L, ran.peak_rss_kib));
    plan::store_compile_peaks(m.fs, cache_dir(m, options), peaks);
  }
  outcome.steps_run = ran.steps_run;
  outcome.cache = ran.cache;
  fs::path package = options.python_package.empty() ? default_python_package(m.fs) : options.python_package;
  wheel::BuildInfo info;
  record::Record rec;
  auto files = OPFORGE_TRY(wheel_files(m, plan, ran, package, info, rec.outputs));
  const wheel::Spec spec = wheel_spec(plan, info, std::move(files));
  rec.inputs = record_inputs(m, plan, graph, m.fs.absolute(recipe_file), recipe_text);
  rec.inputs["fingerprint"] = fingerprint(spec, rec.inputs);
  return commit_or_reuse(m, std::move(outcome), spec, std::move(rec), options);
}

}  // namespace

std::vector<std::string> planned_gpu_targets(const plan::Plan& plan) {
  std::vector<std::string> out;
  for (const auto& a : plan.arch.arches) out.push_back("sm_" + a.sm());
  for (const auto& a : plan.arch.arches)
    if (a.ptx) out.push_back("compute_" + a.sm());
  return out;
}

std::string arch_summary(const plan::Plan& plan, const std::vector<std::string>& project,
                         const std::vector<std::string>& compiled) {
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
  // A project whose nvcc did not run through opforge's wrapper (its own nvcc path, a build without
  // torch's ninja) is compiled as it says: name it rather than claim the plan's list.
  if (plan.recipe.arch.enforce && !compiled.empty() && !planned.empty() && numbers(compiled) != numbers(planned))
    line += "\n  warning: the wheel's GPU code is not the plan's " + strings::join(planned, " ") +
            ": the project's nvcc did not run through opforge's wrapper (PYTORCH_NVCC)";
  return line;
}

std::vector<OpSummaryLine> op_summary(const plan::Plan& plan, const std::vector<compile::OpStep>& steps) {
  std::vector<OpSummaryLine> out;
  for (auto& d : plan.ops) {
    OpSummaryLine l{d.manifest.name, "built", "", -1};
    auto step = std::find_if(steps.begin(), steps.end(), [&](auto& s) { return s.op == d.manifest.name; });
    if (step != steps.end()) l.seconds = step->seconds;
    if (step != steps.end() && step->status == compile::OpStatus::failed) {
      l.status = "failed";
      l.reason = step->first_error;
    } else if (!d.requested) {
      l.status = "not requested";
    } else if (!d.build) {
      l.status = "skipped";
      l.reason = d.reason.starts_with("skipped: ") ? d.reason.substr(9) : d.reason;
    }
    out.push_back(std::move(l));
  }
  return out;
}

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
  Outcome done = plan.recipe.build.backend == recipe::Backend::command
                     ? OPFORGE_TRY(build_with_command(m, std::move(outcome), recipe_file, recipe_text, options))
                     : OPFORGE_TRY(build_native(m, std::move(outcome), recipe_file, recipe_text, options));
  auto dist_lock = OPFORGE_TRY(lock_dist(m, done.plan.dist_dir, options.on_line));
  OPFORGE_CHECK(
      land(m.fs, done.plan.dist_dir, summary_row(done, options.cell, std::chrono::steady_clock::now() - start)));
  return done;
}

}  // namespace opforge::pipeline
