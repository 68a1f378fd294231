// `opforge doctor`: renders doctor::examine's report as text or JSON.
#include <iostream>

#include <nlohmann/json.hpp>

#include "cache/cache.h"
#include "cli/command.h"
#include "cuda/provision.h"
#include "doctor/doctor.h"
#include "util/strings.h"

namespace opforge::cli {
namespace {

using nlohmann::json;

json torch_json(const doctor::Report& r) {
  json t{{"python", r.python}};
  const auto& torch = r.torch;
  if (!torch) t["status"] = "cannot run " + r.python;
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

json toolkit_json(const doctor::ToolkitReport& t) {
  const auto& c = t.candidate;
  json e{{"path", c.path.string()}, {"found_by", c.found_by}, {"verdict", c.verdict}, {"chosen", c.chosen}};
  if (c.toolkit && t.limits) {
    e["version"] = c.toolkit->version.str();
    e["version_source"] = c.toolkit->version_source;
    e["max_gcc"] = t.limits->max_gcc;
    e["max_clang"] = t.limits->max_clang;
    e["limits_source"] = t.limits->source;
    e["accepts"] = t.accepts;
  }
  return e;
}

json tool_json(const std::optional<doctor::ToolReport>& tool) {
  return tool ? json{{"path", tool->path.string()}, {"version", tool->version}} : json{{"path", nullptr}};
}

/// The report as `doctor --json` prints it (and print_text reads).
json to_json(const doctor::Report& r) {
  json j;
  j["warnings"] = r.warnings;
  j["torch"] = torch_json(r);
  j["compilers"] = json::array();
  for (auto& c : r.compilers)
    j["compilers"].push_back({{"cc", c.cc.string()},
                              {"cxx", c.cxx.string()},
                              {"family", c.family == compiler::Family::gcc ? "gcc" : "clang"},
                              {"version", c.version.str(3)},
                              {"default", c.is_default}});
  j["toolkits"] = json::array();
  for (auto& t : r.toolkits) j["toolkits"].push_back(toolkit_json(t));
  if (r.cuda_error) j["cuda_error"] = *r.cuda_error;
  json gpus = json::array();
  for (auto& x : r.gpus)
    gpus.push_back({{"index", x.index},
                    {"name", x.name},
                    {"capability", std::to_string(x.major) + "." + std::to_string(x.minor)}});
  j["gpus"] = {{"reader", r.gpu_reader}, {"devices", gpus}};
  j["ninja"] = tool_json(r.ninja);
  j["ccache"] = tool_json(r.ccache);
  if (r.kernel) j["kernel"] = *r.kernel;
  j["ops"] = json::array();
  for (auto& d : r.ops)
    j["ops"].push_back(
        json{{"name", d.manifest.name}, {"requested_by", d.requested_by}, {"build", d.build}, {"why", d.reason}});
  if (r.ops_error) j["ops_error"] = *r.ops_error;
  j["libaio"] = r.libaio ? json(*r.libaio) : json(nullptr);
  return j;
}

void print_text(const json& j) {
  auto s = [](const json& v) {
    return v.is_string() ? v.get<std::string>() : v.is_null() ? std::string("-") : v.dump();
  };
  std::cout << "torch (" << s(j["torch"]["python"]) << "): " << s(j["torch"]["status"]);
  if (j["torch"].contains("version")) std::cout << " (torch " << s(j["torch"]["version"]) << ")";
  std::cout << "\n\nCUDA toolkits:\n";
  for (auto& t : j["toolkits"]) {
    std::cout << "  " << (t["chosen"].get<bool>() ? "* " : "  ") << s(t["path"]);
    if (t.contains("version")) std::cout << "  CUDA " << s(t["version"]) << " [" << s(t["version_source"]) << "]";
    std::cout << "  (" << s(t["found_by"]) << ")\n      " << s(t["verdict"]) << "\n";
    if (t.contains("max_gcc"))
      std::cout << "      accepts gcc <= " << t["max_gcc"] << ", clang <= " << t["max_clang"] << " ("
                << s(t["limits_source"]) << "); installed accepted: "
                << (t["accepts"].empty() ? std::string("none")
                                         : strings::join(t["accepts"].get<std::vector<std::string>>(), ", "))
                << "\n";
  }
  if (j.contains("cuda_error")) std::cout << "  " << s(j["cuda_error"]) << "\n";
  if (j.contains("provisioned_toolkits")) {
    std::cout << "\nProvisioned toolkits (from PyPI):\n";
    if (j["provisioned_toolkits"].empty()) std::cout << "  none\n";
    for (auto& p : j["provisioned_toolkits"]) {
      std::vector<std::string> names;
      for (auto& k : p["packages"]) names.push_back(s(k["name"]) + " " + s(k["version"]));
      std::cout << "  " << s(p["dir"]) << "  CUDA " << s(p["cuda"]) << " (" << s(p["requirement"]) << ")\n      "
                << strings::join(names, ", ") << "\n";
    }
  }
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
    std::cout << tool << ": "
              << (j[tool]["path"].is_null() ? std::string("not found")
                                            : s(j[tool]["path"]) + " " + s(j[tool]["version"]))
              << "\n";
  if (j.contains("kernel")) std::cout << "kernel: " << s(j["kernel"]) << "\n";
  if (j.contains("cache"))
    std::cout << "cache: " << s(j["cache"]["path"]) << " ("
              << cache::human_size(j["cache"]["bytes"].get<std::uint64_t>()) << "; `opforge cache` lists it)\n";
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
        auto m = probe::real_machine();
        auto j = to_json(doctor::examine(m, args->python, args->recipe));
        // What opforge keeps in its cache folder: provisioned toolkits, and the folder's size.
        const auto cache_dir = probe::default_cache_dir(m.env);
        j["provisioned_toolkits"] = json::array();
        for (auto& p : cuda::list_provisioned(m.fs, cache_dir))
          j["provisioned_toolkits"].push_back(json::parse(cuda::provision_json_text(p)));
        j["cache"] = {{"path", cache_dir.string()}, {"bytes", cache_dir.empty() ? 0 : cache::size_of(m.fs, cache_dir)}};
        if (args->json) std::cout << j.dump(2) << "\n";
        else print_text(j);
        return {};
      };
    },
}};

}  // namespace
}  // namespace opforge::cli
