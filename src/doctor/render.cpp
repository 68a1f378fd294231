// `opforge doctor`'s two renderings of doctor::examine's report: JSON, and the text made from it.
#include "doctor/render.h"

#include <sstream>

#include "target/x86.h"
#include "util/strings.h"

namespace opforge::doctor {
namespace {

using nlohmann::json;

json torch_json(const Report& r) {
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

json toolkit_json(const ToolkitReport& t) {
  const auto& c = t.candidate;
  json e{{"path", c.path.string()},
         {"found_by", c.found_by},
         {"verdict", c.said()},
         {"status", cuda::verdict_name(c.verdict)},
         {"chosen", c.chosen()}};
  if (c.toolkit && t.limits) {
    e["version"] = c.toolkit->version.str();
    e["version_source"] = c.toolkit->version_source;
    e["layout"] = std::string(cuda::layout_name(c.toolkit->layout));
    e["nvcc"] = c.toolkit->real_nvcc.string();
    e["include_dir"] = c.toolkit->include_dir.string();
    e["lib_dir"] = c.toolkit->lib_dir.string();
    e["max_gcc"] = t.limits->max_gcc;
    e["max_clang"] = t.limits->max_clang;
    e["limits_source"] = t.limits->source;
    e["accepts"] = t.accepts;
    if (t.wrapper)
      e["own_wrapper"] = {{"path", t.wrapper->path.string()},
                          {"candidates", t.wrapper->candidates},
                          {"runs", t.wrapper->runs ? json(*t.wrapper->runs) : json(nullptr)},
                          {"text", compiler::wrapper_text(*t.wrapper)}};
  }
  return e;
}

/// What `verify --nodes` reads of this node (the Python and torch beside it: "torch").
json node_json(const Report& r) {
  const NodeInfo& n = r.node;
  auto text_or_null = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  json j{{"format", kNodeFormat},
         {"host", text_or_null(n.host)},
         {"machine", text_or_null(n.machine)},
         {"glibc", n.glibc_minor ? json("2." + std::to_string(*n.glibc_minor)) : json(nullptr)},
         {"glibcxx", text_or_null(n.glibcxx)},
         {"cxxabi", text_or_null(n.cxxabi)},
         {"cpu_level", n.cpu_level ? json(target::level_name(n.cpu_level)) : json(nullptr)}};
  j["python"] =
      r.torch && r.torch->python_version
          ? json(std::to_string(r.torch->python_version->first) + "." + std::to_string(r.torch->python_version->second))
          : json(nullptr);
  // null: no driver answered; a version of null: the driver answered, its file was not there.
  j["driver"] = n.driver_version.empty() && n.driver_cuda.empty()
                    ? json(nullptr)
                    : json{{"version", text_or_null(n.driver_version)}, {"cuda", text_or_null(n.driver_cuda)}};
  return j;
}

json tool_json(const std::optional<ToolReport>& tool) {
  return tool ? json{{"path", tool->path.string()}, {"version", tool->version}} : json{{"path", nullptr}};
}

}  // namespace

json to_json(const Report& r) {
  json j;
  j["warnings"] = r.warnings;
  j["torch"] = torch_json(r);
  j["compilers"] = json::array();
  for (auto& c : r.compilers)
    j["compilers"].push_back({{"cc", c.cc.string()},
                              {"cxx", c.cxx.string()},
                              {"family", compiler::family_name(c.family)},
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
  j["sccache"] = tool_json(r.sccache);
  if (r.scheduler)
    j["scheduler"] = {{"url", r.scheduler->url},
                      {"state", r.scheduler->state},
                      {"servers", r.scheduler->servers},
                      {"cpus", r.scheduler->cpus},
                      {"said", r.scheduler->said}};
  if (r.kernel) j["kernel"] = *r.kernel;
  j["node"] = node_json(r);
  j["ops"] = json::array();
  for (auto& d : r.ops)
    j["ops"].push_back(json{{"name", d.manifest.name},
                            {"requested_by", d.requested_by},
                            {"build", d.builds()},
                            {"status", ops::status_name(d.status)},
                            {"reason", d.reason}});
  if (r.ops_error) j["ops_error"] = *r.ops_error;
  j["libaio"] = r.libaio ? json(*r.libaio) : json(nullptr);
  j["cross"] = json::array();
  for (const auto& c : r.cross) {
    json needs = json::array();
    for (const auto& n : c.needs)
      needs.push_back({{"what", n.what},
                       {"name", n.name},
                       {"found", n.found.empty() ? json(nullptr) : json(n.found)},
                       {"package", n.package.empty() ? json(nullptr) : json(n.package)},
                       {"for", n.needed_for}});
    j["cross"].push_back(
        {{"platform", c.platform}, {"needs", needs}, {"install", c.install.empty() ? json(nullptr) : json(c.install)}});
  }
  return j;
}

std::string to_text(const json& j) {
  std::ostringstream out;
  auto s = [](const json& v) {
    return v.is_string() ? v.get<std::string>() : v.is_null() ? std::string("-") : v.dump();
  };
  out << "torch (" << s(j["torch"]["python"]) << "): " << s(j["torch"]["status"]);
  if (j["torch"].contains("version")) out << " (torch " << s(j["torch"]["version"]) << ")";
  out << "\n\nCUDA toolkits:\n";
  for (auto& t : j["toolkits"]) {
    out << "  " << (t["chosen"].get<bool>() ? "* " : "  ") << s(t["path"]);
    if (t.contains("version")) out << "  CUDA " << s(t["version"]) << " [" << s(t["version_source"]) << "]";
    out << "  (" << s(t["found_by"]) << ")\n      " << s(t["verdict"]) << "\n";
    if (t.contains("layout"))
      out << "      layout: " << s(t["layout"]) << " (nvcc " << s(t["nvcc"]) << ", cuda.h in " << s(t["include_dir"])
          << ", libcudart in " << s(t["lib_dir"]) << ")\n";
    if (t.contains("max_gcc"))
      out << "      accepts gcc <= " << t["max_gcc"] << ", clang <= " << t["max_clang"] << " (" << s(t["limits_source"])
          << "); installed accepted: "
          << (t["accepts"].empty() ? std::string("none")
                                   : strings::join(t["accepts"].get<std::vector<std::string>>(), ", "))
          << "\n";
    if (t.contains("own_wrapper"))
      out << "      host compiler: " << s(t["own_wrapper"]["text"])
          << " when nvcc gets no -ccbin; opforge passes -ccbin\n";
  }
  if (j.contains("cuda_error")) out << "  " << s(j["cuda_error"]) << "\n";
  if (j.contains("provisioned_toolkits")) {
    out << "\nProvisioned toolkits (from PyPI):\n";
    if (j["provisioned_toolkits"].empty()) out << "  none\n";
    for (auto& p : j["provisioned_toolkits"]) {
      std::vector<std::string> names;
      for (auto& k : p["packages"]) names.push_back(s(k["name"]) + " " + s(k["version"]));
      out << "  " << s(p["dir"]) << "  CUDA " << s(p["cuda"]) << " (" << s(p["requirement"]) << ")\n      "
          << strings::join(names, ", ") << "\n";
    }
  }
  out << "\nHost compilers:\n";
  for (auto& c : j["compilers"])
    out << "  " << s(c["cxx"]) << "  " << s(c["family"]) << " " << s(c["version"])
        << (c["default"].get<bool>() ? "  (default)" : "") << "\n";
  const std::string reader = s(j["gpus"]["reader"]);
  if (j["gpus"]["devices"].empty())  // "none (libcuda.so.1 cannot be loaded ...)" says why itself
    out << "\nGPUs: " << (reader.starts_with("none") ? reader : "none (" + reader + ")") << "\n";
  else out << "\nGPUs (" << reader << "):\n";
  for (auto& g : j["gpus"]["devices"])
    out << "  " << g["index"] << ": " << s(g["name"]) << " (" << s(g["capability"]) << ")\n";
  out << "\nlibaio: " << (j["libaio"].is_null() ? std::string("not found") : s(j["libaio"])) << "\n";
  for (const char* tool : {"ninja", "ccache", "sccache"})
    if (j.contains(tool))
      out << tool << ": "
          << (j[tool]["path"].is_null() ? std::string("not found") : s(j[tool]["path"]) + " " + s(j[tool]["version"]))
          << "\n";
  if (j.contains("scheduler")) out << "sccache scheduler: " << s(j["scheduler"]["said"]) << "\n";
  if (j.contains("kernel")) out << "kernel: " << s(j["kernel"]) << "\n";
  if (j.contains("node")) {
    // One line of what a wheel installed here meets (`verify WHEEL --nodes` reads it from --json).
    const auto& n = j["node"];
    std::vector<std::string> parts;
    if (n["machine"].is_string()) parts.push_back(s(n["machine"]));
    if (n["glibc"].is_string()) parts.push_back("glibc " + s(n["glibc"]));
    if (n["glibcxx"].is_string()) parts.push_back("libstdc++ GLIBCXX_" + s(n["glibcxx"]));
    if (n["cpu_level"].is_string()) parts.push_back(s(n["cpu_level"]));
    if (n["driver"].is_object())
      parts.push_back(
          "NVIDIA driver " +
          (n["driver"]["version"].is_string() ? s(n["driver"]["version"]) : std::string("(version not read)")) +
          (n["driver"]["cuda"].is_string() ? " (CUDA " + s(n["driver"]["cuda"]) + ")" : std::string()));
    else parts.push_back("no NVIDIA driver");
    out << "node" << (n["host"].is_string() ? " " + s(n["host"]) : std::string()) << ": " << strings::join(parts, ", ")
        << "\n";
  }
  if (j.contains("cache")) {
    const auto& c = j["cache"];
    const auto entries = c.value("entries", std::uint64_t{0});
    const auto unmeasured = c.value("unmeasured", std::uint64_t{0});
    out << "cache: " << s(c["path"]) << " (" << strings::human_size(c.value("bytes", std::uint64_t{0})) << " in "
        << entries << (entries == 1 ? " entry" : " entries")
        << (unmeasured ? ", " + std::to_string(unmeasured) + " not measured yet" : std::string())
        << "; `opforge cache` lists them)\n";
  }
  if (j.contains("cross"))
    for (const auto& c : j["cross"]) {
      out << "\nCross-builds for " << s(c["platform"]) << " ([build] platform, --platform):\n";
      for (const auto& n : c["needs"])
        out << "  " << s(n["what"]) << ": "
            << (n["found"].is_string() ? s(n["found"])
                                       : "missing " + s(n["name"]) +
                                             (n["package"].is_string() ? " (" + s(n["package"]) + ")"
                                                                       : std::string(", fetched by the build")))
            << "  — " << s(n["for"]) << "\n";
      if (c["install"].is_string()) out << "  to add what is missing: " << s(c["install"]) << "\n";
    }
  out << "\nOps:\n";
  for (auto& o : j["ops"])
    out << "  " << s(o["name"]) << ": " << s(o["status"]) << " (" << s(o["requested_by"]) << ") " << s(o["reason"])
        << "\n";
  if (j.contains("ops_error")) out << "  " << s(j["ops_error"]) << "\n";
  if (!j["warnings"].empty()) {
    out << "\nWarnings:\n";
    for (auto& w : j["warnings"]) out << "  " << s(w) << "\n";
  }
  return out.str();
}

}  // namespace opforge::doctor
