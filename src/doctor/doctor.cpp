#include "doctor/doctor.h"

#include <set>

#include "compiler/resolve.h"
#include "cuda/mismatch.h"
#include "cuda/resolve.h"
#include "devices/resolve.h"
#include "probe/json_cache.h"
#include "recipe/recipe.h"
#include "settings/settings.h"
#include "util/strings.h"

namespace opforge::doctor {
namespace {

std::optional<ToolReport> find_tool(probe::Machine m, const std::string& name) {
  auto where = probe::find_on_path(m.fs, name, settings::path(m.env));
  if (!where) return std::nullopt;
  ToolReport tool{*where, ""};
  auto r = probe::run_remembered(
      m, probe::Command{.argv = {where->string(), "--version"}, .timeout = std::chrono::milliseconds(5000)});
  if (r && r->ok()) {
    auto lines = strings::split(r->out, '\n');
    if (!lines.empty()) tool.version = std::string(strings::trim(lines[0]));
  }
  return tool;
}

/// Every toolkit candidate with the installed compilers it accepts; the resolution's warnings go to
/// the report (torch's mismatch said once, in its own words).
void examine_toolkits(probe::Machine m, const cuda::Resolution& found, const Result<cuda::Resolution>& res,
                      Report& out) {
  if (res) {
    std::string match;
    if (out.torch && res->chosen) match = cuda::torch_match(*out.torch, *res->chosen).message;
    for (std::size_t i = 0; i < res->warnings.size(); ++i)
      if (match.empty() || i != res->minor_mismatch_warning) out.warnings.push_back(res->warnings[i]);
    if (!match.empty()) out.warnings.push_back(match);
  } else {
    out.cuda_error = res.error().render();
  }
  for (auto& c : res ? res->candidates : found.candidates) {
    ToolkitReport t{c, std::nullopt, {}, std::nullopt};
    if (c.toolkit) {
      t.limits = compiler::limits_for(m, *c.toolkit);
      t.wrapper = compiler::toolkit_wrapper(m, *c.toolkit);
      for (auto& comp : out.compilers)
        if (compiler::accepted(comp, *t.limits)) t.accepts.push_back(comp.cxx.filename().string());
    }
    out.toolkits.push_back(std::move(t));
  }
}

void examine_gpus(probe::Machine m, Report& out) {
  out.gpus = devices::read_gpus(m, out.gpu_reader);
  std::set<std::pair<int, int>> kinds;
  for (auto& g : out.gpus) kinds.insert({g.major, g.minor});
  if (kinds.size() > 1)
    out.warnings.push_back(
        "mixed GPU generations on this node: the slowest GPU paces synchronous training, and the arch list must cover "
        "each kind");
}

void examine_kernel(probe::Machine m, Report& out) {
  auto text = m.fs.read_file("/proc/sys/kernel/osrelease");
  if (!text) return;
  std::string k(strings::trim(*text));
  out.kernel = k;
  auto v = parse_version(k);
  if (v && *v < Version{5, 5})
    out.warnings.push_back("Linux kernel " + k +
                           " is older than 5.5: distributed training is known to hang on such kernels");
}

/// The ops the recipe (or the bundled default one) would build, with why; a recipe or manifest
/// error goes to ops_error (a missing default recipe is no error).
void examine_ops(probe::Machine m, const fs::path& recipe, bool have_toolkit, const AskScheduler& ask, Report& out) {
  const fs::path path = recipe.empty() ? probe::data_dir(m.fs) / "recipes/default.toml" : recipe;
  auto rec = recipe::load(m, path);
  if (!rec) {
    if (!recipe.empty()) out.ops_error = rec.error().render();
    return;
  }
  fs::path src = rec->source.path.value_or(rec->dir);
  auto manifests = ops::load_manifests(m, src / rec->source.ops_dir);
  if (!manifests) {
    out.ops_error = manifests.error().render();
    return;
  }
  ops::DecideContext ctx;
  ctx.cache_dir = settings::cache_dir(m.env);
  if (!have_toolkit) ctx.cuda_unavailable = "no CUDA toolkit";
  auto decisions = ops::decide(m, *manifests, *rec, ctx);
  if (!decisions) out.ops_error = decisions.error().render();
  else out.ops = std::move(*decisions);
  if (ask && rec->build.cache == recipe::Cache::sccache && !rec->build.scheduler.empty())
    out.scheduler = ask(rec->build.scheduler, rec->build.scheduler_token_file);
}

std::optional<std::string> find_libaio(probe::Machine m) {
  for (const char* name : {"libaio.so.1", "libaio.so.1t64"}) {
    if (void* h = m.dl.open(name)) {
      m.dl.close(h);
      return name;
    }
  }
  return std::nullopt;
}

}  // namespace

Report examine(probe::Machine m, const std::string& python, const fs::path& recipe, const AskScheduler& ask) {
  Report out;
  out.python = python;
  out.torch = cuda::read_torch(m, python);
  auto found = cuda::discover(m, out.torch);
  auto res = cuda::choose(found, "auto", m.env);
  out.compilers = compiler::find_installed(m);
  examine_toolkits(m, found, res, out);
  examine_gpus(m, out);
  out.ninja = find_tool(m, "ninja");
  out.ccache = find_tool(m, "ccache");
  out.sccache = find_tool(m, "sccache");
  examine_kernel(m, out);
  out.node = read_node(m);
  examine_ops(m, recipe, res && res->chosen, ask, out);
  out.libaio = find_libaio(m);
  out.cross = examine_cross(m, python, out.torch, res && res->chosen ? &*res->chosen : nullptr);
  return out;
}

}  // namespace opforge::doctor
