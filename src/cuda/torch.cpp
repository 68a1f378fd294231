#include "cuda/torch.h"

#include <nlohmann/json.hpp>

#include "cuda/versions.h"
#include "probe/json_cache.h"
#include "settings/settings.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/json_read.h"
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
  auto j = util::json_parse(text);
  if (!j.is_object()) return out;
  out.ok = true;
  namespace jr = util::json_read;
  out.torch_origin = jr::text_or(j, "torch");
  for (auto& l : jr::texts(j, "locations")) out.torch_locations.emplace_back(l);
  for (auto& p : jr::texts(j, "path")) out.sys_path.push_back(p);
  out.cflags = jr::text_or(j, "cflags");
  // [major, minor], small non-negative integers (a damaged file must not wrap them into an int)
  if (const auto* v = jr::array(j, "version"); v && v->size() == 2) {
    auto major = jr::count((*v)[0]), minor = jr::count((*v)[1]);
    if (major && minor && *major < 100 && *minor < 1000)
      out.version = {static_cast<int>(*major), static_cast<int>(*minor)};
  }
  out.include = jr::text_or(j, "include");
  out.stdlib = jr::text_or(j, "stdlib");
  return out;
}

namespace {

// find_spec locates the package as `import torch` would (PYTHONPATH, .pth files, editable
// installs) without importing it: importing torch costs seconds, starting python milliseconds.
constexpr const char* kProbeProgram =
    "import importlib.util, json, sys, sysconfig\n"
    "s = importlib.util.find_spec('torch')\n"
    "print(json.dumps({'torch': s.origin if s else None,\n"
    "  'locations': list(s.submodule_search_locations or []) if s else [],\n"
    "  'path': sys.path, 'cflags': sysconfig.get_config_var('CFLAGS') or '',\n"
    "  'version': list(sys.version_info[:2]), 'include': sysconfig.get_path('include') or '',\n"
    "  'stdlib': sysconfig.get_path('stdlib') or ''}))";

nlohmann::json stamp_json(const probe::FileSystem& fs, const fs::path& p) {
  auto st = fs.stamp(p);
  if (!st) return nullptr;  // missing: its appearance must invalidate the answer too
  return nlohmann::json::array({st->size, st->mtime_ns, st->inode});
}

/// Paths whose change may change the answer: every folder on sys.path (a package installed or
/// removed changes its modification time), the `.python-version` file pyenv would read in the
/// working folder and each of its parents (the file, not the folder: a new file in a busy /tmp or
/// $HOME must not cost a Python start), and pyenv's global version file.
std::vector<fs::path> watched(probe::Machine m, const PythonProbe& probe, const fs::path& cwd) {
  std::vector<fs::path> out;
  for (const auto& p : probe.sys_path) out.push_back(p.empty() ? cwd : m.fs.absolute(p).lexically_normal());
  for (fs::path d = cwd; !d.empty(); d = d.parent_path()) {
    out.push_back(d / ".python-version");
    if (d == d.root_path()) break;
  }
  if (auto global = settings::pyenv_version_file(m.env); !global.empty()) out.push_back(global);
  return out;
}

/// Everything else the answer depends on: the interpreter as named and as found (with its
/// stamp), the variables above and the working folder.
std::string cache_key(probe::Machine m, const std::string& python, const fs::path& cwd) {
  fs::path found = python;
  if (python.find('/') == std::string::npos)
    if (auto f = probe::find_on_path(m.fs, python, settings::path(m.env))) found = *f;
  const fs::path real = m.fs.canonical(found).value_or(found);
  nlohmann::json k{{"python", python},
                   {"real", real.string()},
                   {"stamp", stamp_json(m.fs, real)},
                   {"cwd", cwd.string()},
                   {"program", sha256_hex(kProbeProgram)}};
  for (auto& [name, value] : settings::python_variables(m.env))
    k[name] = value ? nlohmann::json(*value) : nlohmann::json();
  return sha256_hex(util::json_dump(k));
}

/// The remembered output of the probe program, when every watched path is as it was.
std::optional<std::string> remembered(probe::Machine m, const nlohmann::json* entry) {
  if (!entry) return std::nullopt;
  auto out = util::json_read::text(*entry, "out");
  const auto* watch = util::json_read::object(*entry, "watch");
  if (!out || !watch) return std::nullopt;
  for (const auto& [path, stamp] : watch->items())
    if (stamp_json(m.fs, path) != stamp) return std::nullopt;
  return out;
}

/// The probe program's output: remembered (probe::default_cache_dir()/python.json) while nothing
/// it depends on changed, else from one run of `python`.
std::optional<std::string> probe_output(probe::Machine m, const std::string& python) {
  const fs::path dir = settings::cache_dir(m.env);
  probe::JsonCache cache(m.fs, dir.empty() ? fs::path() : dir / "python.json");
  const fs::path cwd = m.fs.absolute(".").lexically_normal();
  const std::string key = dir.empty() ? std::string() : cache_key(m, python, cwd);
  if (!key.empty())
    if (auto out = remembered(m, cache.find(key))) return out;
  auto r =
      m.proc.run(probe::Command{.argv = {python, "-c", kProbeProgram}, .timeout = std::chrono::milliseconds(20000)});
  if (!r || !r->ok()) return std::nullopt;
  auto probe = parse_python_probe(r->out);
  if (probe.ok && !key.empty()) {
    nlohmann::json watch = nlohmann::json::object();
    for (const auto& p : watched(m, probe, cwd)) watch[p.string()] = stamp_json(m.fs, p);
    cache.store(key, {{"out", r->out}, {"watch", watch}});
  }
  return r->out;
}

}  // namespace

std::optional<PythonProbe> read_python(probe::Machine m, const std::string& python) {
  auto out = probe_output(m, python);
  if (!out) return std::nullopt;
  auto probe = parse_python_probe(*out);
  if (!probe.ok) return std::nullopt;
  return probe;
}

std::optional<TorchInfo> read_torch(probe::Machine m, const std::string& python) {
  auto read = read_python(m, python);
  if (!read) return std::nullopt;
  const PythonProbe& probe = *read;
  TorchInfo info;
  info.python = python;
  info.python_version = probe.version;
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
