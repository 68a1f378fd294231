#include "util/hash.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "ops/cache.h"
#include "ops/ops.h"
#include "settings/settings.h"
#include "util/json_read.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace opforge::ops {
namespace {

std::string probe_source(const Probe& p) {
  std::string src;
  if (!p.header.empty()) src += "#include <" + p.header + ">\n";
  src += "int main() {\n  " + p.code + "\n  return 0;\n}\n";
  return src;
}

enum class Want { off, on, automatic };

/// The line of a compiler's output that says what failed: the first with "error" or "cannot find"
/// (the linker's), else the first; never collect2's summary ("ld returned 1 exit status").
std::string first_error(std::string_view output) {
  std::string first;
  for (auto& line : strings::split(output, '\n')) {
    auto t = strings::trim(line);
    if (t.empty() || t.starts_with("collect2:")) continue;
    if (first.empty()) first = std::string(t);
    if (t.find("error") != std::string_view::npos || t.find("cannot find") != std::string_view::npos)
      return strings::cut(t, 300);
  }
  return first.empty() ? "no output" : strings::cut(first, 300);
}

}  // namespace

std::string probe_fix(const Probe& probe) {
  std::vector<std::string> ways;
  static const std::vector<std::pair<std::string, std::string>> managers = {
      {"apt", "apt-get install "}, {"yum", "yum install "},       {"dnf", "dnf install "},
      {"pacman", "pacman -S "},    {"zypper", "zypper install "}, {"apk", "apk add "}};
  for (auto& [pm, cmd] : managers)
    if (auto it = probe.packages.find(pm); it != probe.packages.end()) ways.push_back(cmd + it->second);
  for (auto& [pm, pkg] : probe.packages)  // clang < 16 cannot capture a structured binding: named
    if (std::none_of(managers.begin(), managers.end(), [&name = pm](auto& e) { return e.first == name; }))
      ways.push_back(pm + ": " + pkg);
  std::string fix = ways.empty() ? "install the library" : "install it (" + strings::join(ways, ", ") + ")";
  return fix + ", or set CFLAGS/LDFLAGS to its include and lib folders (-I... / -L...)";
}

namespace {

std::string why_compiler_missing(probe::Machine m, const std::string& compiler) {
  if (compiler.find('/') != std::string::npos)
    return "the C++ compiler '" + strings::cut(compiler) + "' is not an executable file";
  return "the C++ compiler '" + compiler + "' is not on PATH ('" + strings::cut(settings::path(m.env), 120) + "')";
}

/// The cache key names the exact compiler binary (path + stamp) and everything it is given; empty
/// when the compiler has no stamp (then nothing is cached).
std::string probe_key(probe::Machine m, const fs::path& compiler, const std::vector<std::string>& argv,
                      const std::string& source) {
  auto stamp = m.fs.stamp(compiler);
  if (!stamp) return {};
  return sha256_hex(compiler.string() + "\n" + std::to_string(stamp->size) + ":" + std::to_string(stamp->mtime_ns) +
                    ":" + std::to_string(stamp->inode) + "\n" + strings::join(argv, "\n") + "\n" + source);
}

/// Compiles and links `source` in a temporary folder; a compiler that cannot start is a failed probe.
Result<ProbeOutcome> compile(probe::Machine m, const std::vector<std::string>& argv, const std::string& source) {
  auto dir = OPFORGE_TRY(m.fs.make_temp_directory("opforge-probe-"));
  auto written = m.fs.write_file_atomic(dir / "probe.cpp", source);
  if (!written) {
    (void)m.fs.remove_all(dir);
    return opforge::unexpected(written.error());
  }
  probe::Command cmd;
  cmd.argv = argv;
  cmd.cwd = dir;
  cmd.timeout = std::chrono::seconds(120);
  auto result = m.proc.run(cmd);
  (void)m.fs.remove_all(dir);
  if (!result) return ProbeOutcome{false, false, result.error().message};
  return ProbeOutcome{result->ok(), false, result->out + result->err};
}

}  // namespace

Result<ProbeOutcome> run_probe(probe::Machine m, const Probe& p, const DecideContext& ctx) {
  const ProgramPath compiler = locate_program(m, ctx.probe_compiler);
  // Without a compiler every probe fails: say so, rather than "<library> not found".
  if (!m.fs.is_executable(compiler.real)) {
    ProbeOutcome missing;
    missing.compiler_missing = why_compiler_missing(m, ctx.probe_compiler);
    return missing;
  }
  std::vector<std::string> argv = {compiler.found.string(), "probe.cpp", "-o", "probe"};
  for (auto& f : settings::user_compiler_flags(m.env)) argv.push_back(f);
  for (auto& lib : p.libraries) argv.push_back("-l" + lib);
  const std::string source = probe_source(p);
  const std::string key = ctx.cache_dir.empty() ? std::string() : probe_key(m, compiler.real, argv, source);
  probe::JsonCache cache(m.fs, key.empty() ? fs::path() : ctx.cache_dir / "probes.json");
  if (auto* e = cache.find(key))
    if (auto ok = util::json_read::flag(*e, "ok"))
      return ProbeOutcome{*ok, true, util::json_read::text_or(*e, "output")};
  ProbeOutcome out = OPFORGE_TRY(compile(m, argv, source));
  cache.store(key, {{"ok", out.ok}, {"output", out.output}, {"probe", p.name}, {"compiler", compiler.real.string()}});
  return out;
}

namespace {

/// The DS_BUILD_* values: integers; an empty value counts as unset (DeepSpeed's rule). A value
/// that is no integer, or a variable that names no op, is bad input.
Result<std::map<std::string, long>> build_variables(const probe::Environment& env,
                                                    const std::vector<std::string>& vars) {
  std::map<std::string, long> values;
  for (auto& [name, value] : settings::build_switches(env)) {
    if (value.empty()) continue;
    auto v = numbers::parse_int<long>(strings::trim(value));
    if (!v)
      return bad_input("environment variable " + name + "='" + strings::cut(value) + "' is not an integer",
                       "use " + name + "=1 to build, " + name + "=0 to skip");
    if (name != "DS_BUILD_OPS" && std::find(vars.begin(), vars.end(), name) == vars.end()) {
      std::string msg = "environment variable " + name + " names no op";
      auto candidates = vars;
      candidates.push_back("DS_BUILD_OPS");
      if (auto g = strings::did_you_mean(name, candidates)) msg += "; did you mean " + *g + "?";
      return bad_input(msg, vars.empty() ? "no ops were found" : "ops' variables: " + strings::join(vars, ", "));
    }
    values[name] = *v;
  }
  return values;
}

/// Every op the recipe's [ops] table names exists.
Status check_recipe_ops(const recipe::Recipe& recipe, const std::vector<std::string>& names) {
  for (auto& [name, req] : recipe.ops) {
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    std::string msg = "[ops] names '" + name + "', which is not an op";
    if (auto g = strings::did_you_mean(name, names)) msg += "; did you mean '" + *g + "'?";
    Location loc;
    if (auto it = recipe.locations.find("ops." + name); it != recipe.locations.end()) loc = it->second;
    return bad_input(msg, names.empty() ? "no ops were found" : "ops: " + strings::join(names, ", "), loc);
  }
  return {};
}

/// Whether `op` is wanted, and who asks (`requested_by`): DS_BUILD_* when any is set, else the
/// recipe's [ops] table, else "auto" (or off, DeepSpeed's default, with ctx.default_off).
Want request(const Manifest& op, const std::map<std::string, long>& env_values, const recipe::Recipe& recipe,
             const DecideContext& ctx, std::string& requested_by) {
  if (!env_values.empty()) {
    if (auto it = env_values.find(op.build_var); it != env_values.end()) {
      requested_by = op.build_var + "=" + std::to_string(it->second);
      return it->second ? Want::on : Want::off;
    }
    if (auto all = env_values.find("DS_BUILD_OPS"); all != env_values.end()) {
      requested_by = "DS_BUILD_OPS=" + std::to_string(all->second);
      return all->second ? Want::automatic : Want::off;
    }
    requested_by = "DS_BUILD_OPS unset (default 0) while other DS_BUILD_* are set";
    return Want::off;
  }
  if (recipe.ops.empty() && ctx.default_off) {
    requested_by = "no [ops] table and no DS_BUILD_*: DeepSpeed's default DS_BUILD_OPS=0";
    return Want::off;
  }
  if (recipe.ops.empty()) {
    requested_by = "no [ops] table: \"auto\"";
    return Want::automatic;
  }
  auto it = recipe.ops.find(op.name);
  if (it == recipe.ops.end()) {
    requested_by = "recipe: not listed in [ops]";
    return Want::off;
  }
  Want want = it->second == recipe::OpRequest::on    ? Want::on
              : it->second == recipe::OpRequest::off ? Want::off
                                                     : Want::automatic;
  requested_by = std::string("recipe: ") + (want == Want::on ? "true" : want == Want::off ? "false" : "\"auto\"");
  return want;
}

/// Decides a wanted op: the toolkit, the project's verdict, then each probe; a requested op that
/// cannot be built is unsatisfied, an "auto" one is skipped with why and how to build it.
Status settle(probe::Machine m, Decision& d, Want want, const std::map<std::string, Compatibility>& verdicts,
              const DecideContext& ctx) {
  const Manifest& op = d.manifest;
  std::string why_not, fix;
  if (needs_toolkit(op.kind) && !ctx.cuda_unavailable.empty()) {
    why_not = "it needs CUDA: " + ctx.cuda_unavailable;
    fix = (ctx.cuda_fix.empty() ? "install a CUDA toolkit or set CUDA_HOME" : ctx.cuda_fix) + ", or do not request " +
          op.name;
  }
  if (auto it = verdicts.find(op.name); why_not.empty() && it != verdicts.end() && !it->second.ok) {
    const Compatibility& v = it->second;
    const std::string off = "do not request " + op.name + " (" + op.build_var + "=0)";
    if (v.constructed) {  // is_compatible() said yes, but setup.py would die constructing it
      why_not = "its extension cannot be constructed: " + v.reason;
      fix = (v.fix.empty() ? "fix what it names" : v.fix) + ", or " + off;
    } else {
      std::string cls = op.builder_class.substr(op.builder_class.find(':') + 1);
      why_not = cls + ".is_compatible() says no" + (v.reason.empty() ? std::string() : ": " + v.reason);
      fix = (v.fix.empty() ? "fix what it names" : v.fix) + ", or " + off;
    }
  }
  for (auto& p : op.probes) {
    if (!why_not.empty()) break;
    auto outcome = OPFORGE_TRY(run_probe(m, p, ctx));
    if (!outcome.compiler_missing.empty()) {
      why_not = "cannot look for " + p.name + ": " + outcome.compiler_missing;
      fix = "install a C++ compiler (apt-get install g++), or fix PATH or [compiler] host";
    } else if (!outcome.ok) {
      // The user's flags reach every probe: when they alone break the compiler, the library is
      // not what is missing (CFLAGS=-fnonsense-flag said "libaio not found").
      if (const auto flags = settings::user_compiler_flags(m.env); !flags.empty()) {
        auto control = OPFORGE_TRY(run_probe(m, Probe{"an empty program", "", "", {}, {}}, ctx));
        if (!control.ok && control.compiler_missing.empty()) {
          why_not = "cannot look for " + p.name + ": the C++ compiler fails on an empty program with the flags of " +
                    "CFLAGS/CXXFLAGS/LDFLAGS ('" + strings::cut(strings::join(flags, " "), 120) +
                    "'): " + first_error(control.output);
          fix = "fix CFLAGS, CXXFLAGS or LDFLAGS (or unset them)";
          continue;
        }
      }
      why_not = p.name + " not found (compiling and linking `" + p.code + "`" +
                (p.libraries.empty() ? "" : " with -l" + strings::join(p.libraries, " -l")) +
                " failed: " + first_error(outcome.output) + ")";
      fix = probe_fix(p);
    }
  }
  if (why_not.empty()) {
    d.status = OpStatus::build;
    // The constructed extension's sources beat the ones read from the builder's code (the op's
    // compile cost; builders like inference_core_ops compute theirs at run time).
    if (auto it = verdicts.find(op.name); it != verdicts.end() && !it->second.sources.empty()) {
      d.manifest.sources.clear();
      for (auto& f : it->second.sources) d.manifest.sources.emplace_back(f);
      d.manifest.extension_name = it->second.extension;
      d.manifest.host_args = it->second.host_args;
    }
    d.reason = verdicts.contains(op.name) ? "compatible (is_compatible())" : "compatible";
    if (!op.probes.empty()) {
      std::vector<std::string> pn;
      for (auto& p : op.probes) pn.push_back(p.name);
      d.reason += " (" + strings::join(pn, ", ") + " found)";
    }
    return {};
  }
  if (want == Want::on)
    return unsatisfied("op '" + op.name + "' was requested (" + d.requested_by + ") but cannot be built: " + why_not,
                       fix);
  d.status = OpStatus::skipped;
  d.reason = why_not + "; to build it, " + fix;
  return {};
}

}  // namespace

Result<std::vector<Decision>> decide(probe::Machine m, const std::vector<Manifest>& manifests,
                                     const recipe::Recipe& recipe, const DecideContext& ctx) {
  std::vector<std::string> names, vars;
  for (auto& op : manifests) {
    names.push_back(op.name);
    vars.push_back(op.build_var);
  }
  const auto env_values = OPFORGE_TRY(build_variables(m.env, vars));
  OPFORGE_CHECK(check_recipe_ops(recipe, names));

  std::vector<Decision> out;
  std::vector<Want> wants;
  for (auto& op : manifests) {
    Decision d;
    d.manifest = op;
    wants.push_back(request(op, env_values, recipe, ctx, d.requested_by));
    out.push_back(std::move(d));
  }

  // The project's own verdicts, asked once for every op still in question.
  std::map<std::string, Compatibility> verdicts;
  if (ctx.compatibility) {
    std::vector<Manifest> ask;
    for (std::size_t i = 0; i < out.size(); ++i)
      if (wants[i] != Want::off && !(needs_toolkit(out[i].manifest.kind) && !ctx.cuda_unavailable.empty()))
        ask.push_back(out[i].manifest);
    if (!ask.empty()) verdicts = OPFORGE_TRY(ctx.compatibility(ask));
  }

  for (std::size_t i = 0; i < out.size(); ++i) {
    if (wants[i] == Want::off) {
      out[i].status = OpStatus::not_requested;
      continue;
    }
    out[i].required = wants[i] == Want::on;
    OPFORGE_CHECK(settle(m, out[i], wants[i], verdicts, ctx));
  }
  return out;
}

}  // namespace opforge::ops
