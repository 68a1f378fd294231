// `opforge doctor`: what ds_report says and more — toolkits, torch's CUDA, compilers and which
// toolkit accepts which, GPUs, libaio, ninja, ccache, kernel, ops. Writes nothing.
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cuda/mismatch.h"
#include "compiler/resolve.h"
#include "cuda/resolve.h"
#include "devices/resolve.h"
#include "ops/ops.h"
#include "recipe/recipe.h"
#include "util/strings.h"

namespace opforge::cli {
namespace {

using nlohmann::json;

std::string tool_version(probe::Machine m, const std::string& exe, const std::string& flag) {
  auto r = m.proc.run(probe::Command{.argv = {exe, flag}, .timeout = std::chrono::milliseconds(5000)});
  if (!r || !r->ok()) return {};
  auto lines = strings::split(r->out, '\n');
  return lines.empty() ? std::string() : std::string(strings::trim(lines[0]));
}

json torch_section(const std::optional<cuda::TorchInfo>& torch, const std::string& python) {
  json t{{"python", python}};
  if (!torch) t["status"] = "cannot run " + python;
  else if (!torch->torch_version) t["status"] = "torch not installed";
  else {
    t["version"] = *torch->torch_version;
    t["cuda"] = torch->cuda ? json(torch->cuda->str()) : json(nullptr);
    t["site_packages"] = torch->site_packages.string();
    t["location"] = torch->torch_dir.string();
    t["status"] = torch->cuda ? "CUDA " + torch->cuda->str() : std::string("CPU-only build");
  }
  return t;
}

json compilers_section(const std::vector<compiler::Compiler>& installed) {
  json comps = json::array();
  for (auto& c : installed)
    comps.push_back({{"cc", c.cc.string()}, {"cxx", c.cxx.string()},
                     {"family", c.family == compiler::Family::gcc ? "gcc" : "clang"},
                     {"version", c.version.str(3)}, {"default", c.is_default}});
  return comps;
}

/// Every toolkit candidate with its verdict, version, compiler limits and the installed compilers
/// it accepts; the resolution's warnings go to `warnings` (torch's mismatch said once).
json toolkits_section(probe::Machine m, const cuda::Resolution& found, const Result<cuda::Resolution>& res,
                      const std::optional<cuda::TorchInfo>& torch,
                      const std::vector<compiler::Compiler>& installed, json& warnings) {
  if (res) {
    std::string match;
    if (torch && res->chosen) match = cuda::torch_match(*torch, *res->chosen).message;
    for (auto& w : res->warnings)
      if (match.empty() || w.find("in the minor version") == std::string::npos) warnings.push_back(w);
    if (!match.empty()) warnings.push_back(match);
  }
  json tks = json::array();
  const auto& cands = res ? res->candidates : found.candidates;
  for (auto& c : cands) {
    json e{{"path", c.path.string()}, {"found_by", c.found_by}, {"verdict", c.verdict}, {"chosen", c.chosen}};
    if (c.toolkit) {
      e["version"] = c.toolkit->version.str();
      e["version_source"] = c.toolkit->version_source;
      auto lim = compiler::limits_for(m, *c.toolkit);
      e["max_gcc"] = lim.max_gcc;
      e["max_clang"] = lim.max_clang;
      e["limits_source"] = lim.source;
      json acc = json::array();
      for (auto& comp : installed)
        if (compiler::accepted(comp, lim)) acc.push_back(comp.cxx.filename().string());
      e["accepts"] = acc;
    }
    tks.push_back(e);
  }
  return tks;
}

json gpus_section(probe::Machine m, json& warnings) {
  std::string reader;
  auto gpus = devices::read_gpus(m, reader);
  json g = json::array();
  std::set<std::pair<int, int>> kinds;
  for (auto& x : gpus) {
    g.push_back({{"index", x.index}, {"name", x.name}, {"capability", std::to_string(x.major) + "." + std::to_string(x.minor)}});
    kinds.insert({x.major, x.minor});
  }
  if (kinds.size() > 1)
    warnings.push_back("mixed GPU generations on this node: the slowest GPU paces synchronous training, and the arch list must cover each kind");
  return {{"reader", reader}, {"devices", g}};
}

/// The ops the given recipe (or the bundled default one) would build, with why; a recipe or
/// manifest error goes to `error` (a missing default recipe is no error).
json ops_section(probe::Machine m, const std::string& recipe_path, bool have_toolkit, json& error) {
  std::string rp = recipe_path.empty() ? (probe::data_dir(m.fs) / "recipes/default.toml").string() : recipe_path;
  json ops = json::array();
  auto rec = recipe::load(m, rp);
  if (!rec) {
    if (!recipe_path.empty()) error = rec.error().render();
    return ops;
  }
  std::filesystem::path src = rec->source.path.value_or(rec->dir);
  auto manifests = ops::load_manifests(m, src / rec->source.ops_dir);
  if (!manifests) {
    error = manifests.error().render();
    return ops;
  }
  ops::DecideContext ctx;
  ctx.cache_dir = probe::default_cache_dir(m.env);
  if (!have_toolkit) ctx.cuda_unavailable = "no CUDA toolkit";
  auto decisions = ops::decide(m, *manifests, *rec, ctx);
  if (!decisions) {
    error = decisions.error().render();
    return ops;
  }
  for (auto& d : *decisions)
    ops.push_back(json{{"name", d.manifest.name}, {"requested_by", d.requested_by}, {"build", d.build}, {"why", d.reason}});
  return ops;
}

json gather(probe::Machine m, const std::string& python, const std::string& recipe_path) {
  json j;
  j["warnings"] = json::array();
  auto torch = cuda::read_torch(m, python);
  j["torch"] = torch_section(torch, python);

  auto found = cuda::discover(m, torch);
  auto res = cuda::choose(found, "auto", m.env);
  auto installed = compiler::find_installed(m);
  j["compilers"] = compilers_section(installed);
  j["toolkits"] = toolkits_section(m, found, res, torch, installed, j["warnings"]);
  if (!res) j["cuda_error"] = res.error().render();
  j["gpus"] = gpus_section(m, j["warnings"]);

  auto path = m.env.get("PATH").value_or("");
  for (const char* tool : {"ninja", "ccache"}) {
    auto where = probe::find_on_path(m.fs, tool, path);
    j[tool] = where ? json{{"path", where->string()}, {"version", tool_version(m, where->string(), "--version")}}
                    : json{{"path", nullptr}};
  }
  if (auto v = m.fs.read_file("/proc/sys/kernel/osrelease")) {
    std::string k(strings::trim(*v));
    j["kernel"] = k;
    auto kv = parse_version(k);
    if (kv && *kv < Version{5, 5})
      j["warnings"].push_back("Linux kernel " + k + " is older than 5.5: distributed training is known to hang on such kernels");
  }

  json ops_error;
  j["ops"] = ops_section(m, recipe_path, res && res->chosen, ops_error);
  if (!ops_error.is_null()) j["ops_error"] = ops_error;
  j["libaio"] = nullptr;
  for (const char* name : {"libaio.so.1", "libaio.so.1t64"}) {
    if (void* h = m.dl.open(name)) {
      m.dl.close(h);
      j["libaio"] = name;
      break;
    }
  }
  return j;
}

void print_text(const json& j) {
  auto s = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.is_null() ? std::string("-") : v.dump(); };
  std::cout << "torch (" << s(j["torch"]["python"]) << "): " << s(j["torch"]["status"]);
  if (j["torch"].contains("version")) std::cout << " (torch " << s(j["torch"]["version"]) << ")";
  std::cout << "\n\nCUDA toolkits:\n";
  for (auto& t : j["toolkits"]) {
    std::cout << "  " << (t["chosen"].get<bool>() ? "* " : "  ") << s(t["path"]);
    if (t.contains("version")) std::cout << "  CUDA " << s(t["version"]) << " [" << s(t["version_source"]) << "]";
    std::cout << "  (" << s(t["found_by"]) << ")\n      " << s(t["verdict"]) << "\n";
    if (t.contains("max_gcc"))
      std::cout << "      accepts gcc <= " << t["max_gcc"] << ", clang <= " << t["max_clang"]
                << " (" << s(t["limits_source"]) << "); installed accepted: "
                << (t["accepts"].empty() ? std::string("none") : strings::join(t["accepts"].get<std::vector<std::string>>(), ", ")) << "\n";
  }
  if (j.contains("cuda_error")) std::cout << "  " << s(j["cuda_error"]) << "\n";
  std::cout << "\nHost compilers:\n";
  for (auto& c : j["compilers"])
    std::cout << "  " << s(c["cxx"]) << "  " << s(c["family"]) << " " << s(c["version"])
              << (c["default"].get<bool>() ? "  (default)" : "") << "\n";
  std::cout << "\nGPUs (" << s(j["gpus"]["reader"]) << "):\n";
  if (j["gpus"]["devices"].empty()) std::cout << "  none\n";
  for (auto& g : j["gpus"]["devices"])
    std::cout << "  " << g["index"] << ": " << s(g["name"]) << " (" << s(g["capability"]) << ")\n";
  std::cout << "\nlibaio: " << (j["libaio"].is_null() ? std::string("not found") : s(j["libaio"])) << "\n";
  for (const char* tool : {"ninja", "ccache"})
    std::cout << tool << ": " << (j[tool]["path"].is_null() ? std::string("not found")
                                                            : s(j[tool]["path"]) + " " + s(j[tool]["version"])) << "\n";
  if (j.contains("kernel")) std::cout << "kernel: " << s(j["kernel"]) << "\n";
  std::cout << "\nOps:\n";
  for (auto& o : j["ops"])
    std::cout << "  " << s(o["name"]) << ": " << (o["build"].get<bool>() ? "build" : "skip") << " ("
              << s(o["requested_by"]) << ") " << s(o["why"]) << "\n";
  if (j.contains("ops_error")) std::cout << "  " << s(j["ops_error"]) << "\n";
  if (!j["warnings"].empty()) {
    std::cout << "\nWarnings:\n";
    for (auto& w : j["warnings"]) std::cout << "  " << s(w) << "\n";
  }
}

Registrar doctor_command{{
    "doctor",
    "report toolkits, torch's CUDA, compilers, GPUs, libraries and which ops can be built",
    [](CLI::App& app) -> Runner {
      struct Args {
        bool json = false;
        std::string python = "python3";
        std::string recipe;
      };
      auto args = std::make_shared<Args>();
      app.add_flag("--json", args->json, "print JSON");
      app.add_option("--python", args->python, "the Python whose torch is read (default python3)");
      app.add_option("--recipe", args->recipe, "decide ops for this recipe (default: the bundled one)");
      return [args]() -> Status {
        auto j = gather(probe::real_machine(), args->python, args->recipe);
        if (args->json) std::cout << j.dump(2) << "\n";
        else print_text(j);
        return {};
      };
    },
}};

}  // namespace
}  // namespace opforge::cli
