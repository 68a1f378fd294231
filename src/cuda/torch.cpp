#include "cuda/torch.h"

#include <nlohmann/json.hpp>

#include "cuda/versions.h"
#include "util/hash.h"
#include "util/scan.h"

namespace opforge::cuda {

TorchVersionPy parse_torch_version_py(std::string_view text) {
  TorchVersionPy out;
  // The first line `__version__\s*=\s*['"]([^'"]+)['"]`.
  scan::at_line_starts(text, [&](scan::Cursor c) {
    if (!c.literal("__version__")) return false;
    c.spaces();
    if (!c.literal("=")) return false;
    c.spaces();
    auto v = scan::quoted(c);
    if (!v || v->empty()) return false;
    out.version = std::string(*v);
    return true;
  });
  // The first line `cuda\s*(:\s*[^=\n]+)?=\s*(['"]([^'"]*)['"]|None)`: a type annotation may
  // sit between the name and '=' (`cuda: Optional[str] = '12.1'`); None is a CPU build.
  scan::at_line_starts(text, [&](scan::Cursor c) {
    if (!c.literal("cuda")) return false;
    c.spaces();
    if (c.literal(":")) {
      // The annotation: white space (line breaks too), then at least one character on one line.
      const auto before = c.rest;
      auto space = before.substr(0, c.spaces());
      auto type = c.run([](char ch) { return ch != '=' && ch != '\n'; });
      if (!c.peek('=')) return false;
      // `cuda: = ...`: the last blank is the annotation (a line break cannot be).
      if (type.empty() && (space.empty() || space.back() == '\n')) return false;
    }
    if (!c.literal("=")) return false;
    c.spaces();
    if (c.literal("None")) return true;
    auto v = scan::quoted(c);
    if (!v) return false;
    out.cuda = major_minor(parse_version(*v));
    return true;
  });
  return out;
}

PythonProbe parse_python_probe(std::string_view text) {
  PythonProbe out;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return out;
  out.ok = true;
  if (j.contains("torch") && j["torch"].is_string()) out.torch_origin = j["torch"].get<std::string>();
  if (j.contains("locations") && j["locations"].is_array())
    for (auto& l : j["locations"])
      if (l.is_string()) out.torch_locations.emplace_back(l.get<std::string>());
  if (j.contains("path") && j["path"].is_array())
    for (auto& p : j["path"])
      if (p.is_string()) out.sys_path.push_back(p.get<std::string>());
  if (j.contains("cflags") && j["cflags"].is_string()) out.cflags = j["cflags"].get<std::string>();
  return out;
}

std::optional<TorchInfo> read_torch(probe::Machine m, const std::string& python) {
  // find_spec locates the package as `import torch` would (PYTHONPATH, .pth files, editable
  // installs) without importing it: importing torch costs seconds, starting python milliseconds.
  auto r =
      m.proc.run(probe::Command{.argv = {python, "-c",
                                         "import importlib.util, json, sys, sysconfig\n"
                                         "s = importlib.util.find_spec('torch')\n"
                                         "print(json.dumps({'torch': s.origin if s else None,\n"
                                         "  'locations': list(s.submodule_search_locations or []) if s else [],\n"
                                         "  'path': sys.path, 'cflags': sysconfig.get_config_var('CFLAGS') or ''}))"},
                                .timeout = std::chrono::milliseconds(20000)});
  if (!r || !r->ok()) return std::nullopt;
  auto probe = parse_python_probe(r->out);
  if (!probe.ok) return std::nullopt;
  TorchInfo info;
  info.python = python;
  info.python_cflags = probe.cflags;
  for (auto& p : probe.sys_path) {
    if (!(p.ends_with("site-packages") || p.ends_with("dist-packages"))) continue;
    if (m.fs.resolved_type(fs::path(p)) == probe::FileType::directory) {
      info.site_packages = p;
      break;
    }
  }
  std::vector<fs::path> dirs = probe.torch_locations;
  if (!probe.torch_origin.empty()) dirs.push_back(fs::path(probe.torch_origin).parent_path());
  for (auto& dir : dirs) {
    auto text = m.fs.read_file(dir / "version.py");
    if (!text) continue;
    auto parsed = parse_torch_version_py(*text);
    info.torch_version = parsed.version ? parsed.version : std::optional<std::string>("unknown");
    info.cuda = parsed.cuda;
    info.torch_dir = dir;
    info.torch_version_py_sha256 = sha256_hex(*text);
    // pip-wheel toolkits (nvidia/*) sit beside torch.
    auto parent = dir.parent_path();
    if (parent.filename().string().ends_with("-packages")) info.site_packages = parent;
    break;
  }
  return info;
}

}  // namespace opforge::cuda
