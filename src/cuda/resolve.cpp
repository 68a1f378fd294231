#include "cuda/resolve.h"
#include "util/hash.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "util/numbers.h"
#include "util/scan.h"
#include "util/strings.h"

namespace opforge::cuda {

namespace {

std::optional<Version> major_minor(std::optional<Version> v) {
  if (v) v->patch = 0;
  return v;
}

/// The first `<key>\s+<digits>.<digits>` in `text`: the version after `key`.
std::optional<std::string> version_after(std::string_view text, std::string_view key) {
  for (auto at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
    scan::Cursor c{text.substr(at + key.size())};
    if (!c.spaces()) continue;
    auto start = c.rest.data();
    if (c.digits().empty() || !c.literal(".") || c.digits().empty()) continue;
    return std::string(start, c.rest.data());
  }
  return std::nullopt;
}

/// Calls `match(cursor)` at the start of every line (the text's start, and after each '\n')
/// until it returns true.
template <class Match>
void at_line_starts(std::string_view text, Match match) {
  for (std::size_t at = 0;;) {
    if (match(scan::Cursor{text.substr(at)})) return;
    auto nl = text.find('\n', at);
    if (nl == std::string_view::npos) return;
    at = nl + 1;
  }
}

bool is_quote(char c) { return c == '\'' || c == '"'; }

/// `['"]([^'"]*)['"]` at the cursor (either quote may close): the text between the quotes.
std::optional<std::string_view> quoted(scan::Cursor& c) {
  if (c.done() || !is_quote(c.rest.front())) return std::nullopt;
  c.rest.remove_prefix(1);
  auto inside = c.run([](char ch) { return !is_quote(ch); });
  if (c.done()) return std::nullopt;
  c.rest.remove_prefix(1);
  return inside;
}

}  // namespace

std::optional<Version> parse_version_json(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto it = j.find("cuda");
  if (it == j.end() || !it->is_object()) return std::nullopt;
  auto v = it->find("version");
  if (v == it->end() || !v->is_string()) return std::nullopt;
  return major_minor(parse_version(v->get<std::string>()));
}

std::optional<Version> parse_version_txt(std::string_view text) {
  auto s = version_after(text, "CUDA Version");
  return s ? major_minor(parse_version(*s)) : std::nullopt;
}

std::optional<Version> parse_nvcc_version(std::string_view text) {
  auto s = version_after(text, "release");
  return s ? major_minor(parse_version(*s)) : std::nullopt;
}

std::optional<Version> parse_cuda_h(std::string_view text) {
  // The first `#define\s+CUDA_VERSION\s+([0-9]+)`.
  std::optional<std::string_view> s;
  for (auto at = text.find("#define"); !s && at != std::string_view::npos; at = text.find("#define", at + 1)) {
    scan::Cursor c{text.substr(at + 7)};
    if (!c.spaces() || !c.literal("CUDA_VERSION") || !c.spaces()) continue;
    if (auto d = c.digits(); !d.empty()) s = d;
  }
  if (!s) return std::nullopt;
  // CUDA_VERSION is major * 1000 + minor * 10 (13000 is 13.0); anything past 6 digits is junk.
  auto n = numbers::parse_int<int>(*s);
  if (!n || *n > 999999) return std::nullopt;
  return Version{*n / 1000, (*n % 1000) / 10, 0};
}

TorchVersionPy parse_torch_version_py(std::string_view text) {
  TorchVersionPy out;
  // The first line `__version__\s*=\s*['"]([^'"]+)['"]`.
  at_line_starts(text, [&](scan::Cursor c) {
    if (!c.literal("__version__")) return false;
    c.spaces();
    if (!c.literal("=")) return false;
    c.spaces();
    auto v = quoted(c);
    if (!v || v->empty()) return false;
    out.version = std::string(*v);
    return true;
  });
  // The first line `cuda\s*(:\s*[^=\n]+)?=\s*(['"]([^'"]*)['"]|None)`: a type annotation may
  // sit between the name and '=' (`cuda: Optional[str] = '12.1'`); None is a CPU build.
  at_line_starts(text, [&](scan::Cursor c) {
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
    auto v = quoted(c);
    if (!v) return false;
    out.cuda = major_minor(parse_version(*v));
    return true;
  });
  return out;
}

std::optional<fs::path> parse_nvcc_wrapper(std::string_view script) {
  bool line_start = true;
  for (std::size_t at = 0; at < script.size(); ++at) {
    char ch = script[at];
    if (scan::is_space(ch)) {
      line_start = line_start || ch == '\n';
      continue;
    }
    if (!line_start) continue;
    line_start = false;
    scan::Cursor c{script.substr(at)};
    if (!c.literal("exec") || !c.spaces()) continue;
    if (!c.done() && is_quote(c.rest.front())) c.rest.remove_prefix(1);
    auto word = c.run([](char w) { return !is_quote(w) && !scan::is_space(w); });
    // The path is the word up to its last "/nvcc" (so `.../nvcc;` and `.../nvcc)` read too).
    auto end = word.rfind("/nvcc");
    if (end == std::string_view::npos || end == 0) continue;
    return fs::path(word.substr(0, end + 5));
  }
  return std::nullopt;
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

namespace {

bool exists(const probe::FileSystem& fs, const fs::path& p) { return fs.resolved_type(p) != probe::FileType::none; }

/// Folders `base/targets/*/<leaf>`.
std::vector<fs::path> target_dirs(const probe::FileSystem& fs, const fs::path& root, const std::string& leaf) {
  std::vector<fs::path> out;
  auto names = fs.list_directory(root / "targets");
  if (names)
    for (auto& n : *names) out.push_back(root / "targets" / n / leaf);
  return out;
}

/// The nvcc a wrapper script execs (`exec /path/to/nvcc "$@"`), if `path` is such a script.
std::optional<fs::path> wrapped_nvcc(const probe::FileSystem& fs, const fs::path& path) {
  // The real nvcc is a 30 MB binary: only small files can be scripts worth reading.
  auto st = fs.stamp(path);
  if (!st || st->size > 64 * 1024) return std::nullopt;
  auto text = fs.read_file(path);
  if (!text || !text->starts_with("#!")) return std::nullopt;
  return parse_nvcc_wrapper(*text);
}

struct Finder {
  probe::Machine m;
  Resolution res;
  std::set<std::string> seen;

  void add(const fs::path& root, const std::string& found_by) {
    auto canon = m.fs.canonical(root);
    fs::path real = canon ? *canon : root;
    if (!seen.insert(real.string()).second) {
      for (auto& c : res.candidates)
        if ((c.toolkit ? c.toolkit->root : c.path) == real && c.found_by.find(found_by) == std::string::npos)
          c.found_by += ", " + found_by;
      return;
    }
    Candidate c;
    c.path = real;
    c.found_by = found_by;
    c.verdict = validate(real, c);
    res.candidates.push_back(std::move(c));
  }

  /// Fills c.toolkit when valid; returns the rejection reason otherwise.
  std::string validate(const fs::path& root, Candidate& c) {
    if (auto type = m.fs.resolved_type(root); type != probe::FileType::directory)
      return type == probe::FileType::none ? "rejected: no such folder" : "rejected: not a folder";
    Toolkit tk;
    tk.root = root;
    tk.nvcc = root / "bin" / "nvcc";
    if (!m.fs.is_executable(tk.nvcc)) return "rejected: no executable bin/nvcc";
    std::vector<fs::path> inc{root / "include"};
    for (auto& d : target_dirs(m.fs, root, "include")) inc.push_back(d);
    // pip wheels (nvidia-cuda-runtime-cu12) keep cuda.h in a sibling package.
    inc.push_back(root.parent_path() / "cuda_runtime" / "include");
    for (auto& d : inc)
      if (exists(m.fs, d / "cuda.h")) {
        tk.include_dir = d;
        break;
      }
    if (tk.include_dir.empty()) return "rejected: no cuda.h in include/ or targets/*/include/";
    std::vector<fs::path> libs{root / "lib64", root / "lib"};
    for (auto& d : target_dirs(m.fs, root, "lib")) libs.push_back(d);
    libs.push_back(root.parent_path() / "cuda_runtime" / "lib");
    for (auto& d : libs) {
      auto names = m.fs.list_directory(d);
      if (!names) continue;
      if (std::any_of(names->begin(), names->end(), [](auto& n) { return n.starts_with("libcudart"); })) {
        auto canon = m.fs.canonical(d);
        tk.lib_dir = canon ? *canon : d;
        break;
      }
    }
    if (tk.lib_dir.empty()) return "rejected: no libcudart* in lib64/, lib/ or targets/*/lib/";
    if (auto t = m.fs.read_file(root / "version.json");
        t && (tk.version = parse_version_json(*t).value_or(Version{})) != Version{}) {
      tk.version_source = "version.json";
    } else if (auto t2 = m.fs.read_file(root / "version.txt");
               t2 && (tk.version = parse_version_txt(*t2).value_or(Version{})) != Version{}) {
      tk.version_source = "version.txt";
    } else {
      auto r = m.proc.run(
          probe::Command{.argv = {tk.nvcc.string(), "--version"}, .timeout = std::chrono::milliseconds(20000)});
      if (r && r->ok()) {
        tk.nvcc_version_text = r->out;
        if (auto v = parse_nvcc_version(r->out)) {
          tk.version = *v;
          tk.version_source = "nvcc --version";
        }
      }
      if (tk.version_source.empty()) {
        if (auto h = m.fs.read_file(tk.include_dir / "cuda.h"))
          if (auto v = parse_cuda_h(*h)) {
            tk.version = *v;
            tk.version_source = "cuda.h";
          }
      }
    }
    if (tk.version_source.empty()) return "rejected: no version in version.json, version.txt, nvcc --version or cuda.h";
    c.toolkit = tk;
    return "valid";
  }

  void from_glob(const fs::path& dir, std::string_view prefix, const std::string& label) {
    auto names = m.fs.list_directory(dir);
    if (!names) return;
    for (auto& n : *names)
      if (n.starts_with(prefix) && m.fs.resolved_type(dir / n) == probe::FileType::directory) add(dir / n, label);
  }
};

}  // namespace

Resolution discover(probe::Machine m, const std::optional<TorchInfo>& torch) {
  Finder f{m, {}, {}};
  f.res.torch = torch;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    auto v = m.env.get(var);
    if (v && !v->empty()) f.add(fs::path(*v), var);
  }
  if (auto path = m.env.get("PATH")) {
    if (auto nvcc = probe::find_on_path(m.fs, "nvcc", *path)) {
      fs::path real = *nvcc;
      std::string how = "nvcc on PATH";
      // A wrapper such as /usr/local/bin/nvcc would make /usr/local look like a toolkit.
      for (int hops = 0; hops < 4; ++hops) {
        auto next = wrapped_nvcc(m.fs, real);
        if (!next) break;
        how = "nvcc on PATH (wrapper script " + nvcc->string() + ")";
        real = *next;
      }
      auto canon = m.fs.canonical(real);
      if (canon) real = *canon;
      f.add(real.parent_path().parent_path(), how);
    }
  }
  f.add("/usr/local/cuda", "/usr/local/cuda");
  f.from_glob("/usr/local", "cuda-", "/usr/local/cuda-*");
  f.from_glob("/opt", "cuda", "/opt/cuda*");
  if (auto conda = m.env.get("CONDA_PREFIX"); conda && !conda->empty()) f.add(*conda, "CONDA_PREFIX");
  if (torch && !torch->site_packages.empty()) {
    auto nv = torch->site_packages / "nvidia";
    if (auto names = m.fs.list_directory(nv))
      for (auto& n : *names)
        if (m.fs.is_executable(nv / n / "bin" / "nvcc")) f.add(nv / n, "pip wheel in " + torch->site_packages.string());
  }
  return f.res;
}

namespace {

Result<std::vector<VersionClause>> parse_spec(const std::string& spec) {
  auto clauses = parse_version_spec(spec);
  if (!clauses) {
    Error e = clauses.error();
    e.where = {};  // the recipe's own check points at the file; here the spec has no location
    e.message = "invalid [cuda] version: " + e.message;
    return opforge::unexpected(e);
  }
  return clauses;
}

std::string listing(const Resolution& r) {
  std::string s;
  for (auto& c : r.candidates) {
    s += "\n  " + c.path.string() + " (" + c.found_by + ")";
    if (c.toolkit) s += " CUDA " + c.toolkit->version.str() + " [" + c.toolkit->version_source + "]";
    s += ": " + c.verdict;
  }
  if (r.candidates.empty()) s = "\n  (no candidate folder found)";
  return s;
}

}  // namespace

namespace {

/// A toolkit the user named (PyTorch's order: CUDA_HOME, else CUDA_PATH).
struct Named {
  std::string var, value;
  Candidate* candidate = nullptr;  ///< null when no variable names one
};

/// What every way of choosing looks at.
struct Choice {
  Resolution& res;
  const probe::Environment& env;
  std::vector<Candidate*> valid;  ///< newest first; ties keep discovery order (CUDA_HOME first)
  Named named;
  std::optional<Version> torch_cuda;

  bool skip_cuda_check() const { return env.get("DS_SKIP_CUDA_CHECK") == std::optional<std::string>("1"); }
  opforge::unexpected<Error> conflict(const std::string& what) const {
    return unsatisfied(named.var + "=" + strings::cut(named.value) + " is CUDA " +
                           named.candidate->toolkit->version.str() + ", " + what,
                       "point " + named.var + " at a matching toolkit, unset it, or change [cuda] version");
  }
};

struct Pick {
  Candidate* candidate = nullptr;
  std::string why;
};

std::vector<Candidate*> valid_newest_first(Resolution& res) {
  std::vector<Candidate*> valid;
  for (auto& c : res.candidates)
    if (c.toolkit) valid.push_back(&c);
  std::stable_sort(valid.begin(), valid.end(),
                   [](auto* a, auto* b) { return a->toolkit->version > b->toolkit->version; });
  return valid;
}

/// A toolkit the user named is used or refused, never passed over in silence.
Result<Named> named_toolkit(Resolution& res, const probe::Environment& env) {
  Named named;
  for (const char* v : {"CUDA_HOME", "CUDA_PATH"})
    if (auto x = env.get(v); x && !x->empty()) {
      named.var = v;
      named.value = *x;
      break;
    }
  if (named.var.empty()) return named;
  for (auto& c : res.candidates)
    if (c.found_by.find(named.var) != std::string::npos) {
      named.candidate = &c;
      break;
    }
  if (named.candidate && named.candidate->toolkit) return named;
  std::string reason = named.candidate ? named.candidate->verdict : "rejected: not looked at";
  if (reason.starts_with("rejected: ")) reason = reason.substr(10);
  return bad_input(named.var + "=" + strings::cut(named.value) + " is not a CUDA toolkit: " + reason,
                   "point " + named.var +
                       " at a toolkit's folder (holding bin/nvcc, include/cuda.h and lib64/libcudart*), or unset it");
}

/// [cuda] version = "torch" with CUDA_HOME/CUDA_PATH set: the named toolkit, if its major matches.
Result<Pick> pick_named_for_torch(Choice& ch, const Version& want, const std::string& torch_version) {
  const Version& have = ch.named.candidate->toolkit->version;
  if (have.major != want.major && !ch.skip_cuda_check())
    return ch.conflict("but torch " + torch_version + " is built for CUDA " + want.str() +
                       " ([cuda] version = \"torch\"; DS_SKIP_CUDA_CHECK=1 allows a major mismatch)");
  if (have != want)
    ch.res.warnings.push_back("CUDA " + have.str() + " (" + ch.named.var + ") differs from torch's CUDA " + want.str());
  return Pick{ch.named.candidate, ch.named.var + " points to it"};
}

/// [cuda] version = "torch": torch's CUDA, else its major (PyTorch only warns on a minor mismatch).
Result<Pick> pick_for_torch(Choice& ch) {
  const auto& torch = ch.res.torch;
  if (!torch || !torch->torch_version)
    return unsatisfied(
        "[cuda] version = \"torch\", but " +
            std::string(torch ? "torch is not installed for " + torch->python : "the Python could not be run"),
        "install a CUDA-enabled torch for that Python, choose another one with --python / [cuda] python, or set [cuda] "
        "version to \"auto\" or \"X.Y\"");
  if (!ch.torch_cuda)
    return unsatisfied("[cuda] version = \"torch\", but torch " + *torch->torch_version + " of " + torch->python +
                           " is a CPU-only build",
                       "install a CUDA-enabled torch, or set [cuda] version to \"auto\" or \"X.Y\"");
  const Version& want = *ch.torch_cuda;
  if (ch.named.candidate) return pick_named_for_torch(ch, want, *torch->torch_version);
  for (auto* c : ch.valid)
    if (c->toolkit->version == want) return Pick{c, "same CUDA version as torch " + *torch->torch_version};
  for (auto* c : ch.valid)
    if (c->toolkit->version.major == want.major) {
      ch.res.warnings.push_back("CUDA " + c->toolkit->version.str() + " differs from torch's CUDA " + want.str() +
                                " in the minor version; this usually works (PyTorch only warns)");
      return Pick{c, "same CUDA major as torch"};
    }
  if (ch.valid.empty()) return Pick{};
  if (ch.skip_cuda_check()) {
    Candidate* c = ch.valid.front();
    ch.res.warnings.push_back("CUDA " + c->toolkit->version.str() + " does not match torch's CUDA " + want.str() +
                              " (major mismatch, allowed by DS_SKIP_CUDA_CHECK=1)");
    return Pick{c, "newest valid toolkit (DS_SKIP_CUDA_CHECK=1 bypasses the torch CUDA check)"};
  }
  for (auto* c : ch.valid) c->verdict = "not chosen: CUDA major differs from torch's " + want.str();
  return unsatisfied(
      "no CUDA toolkit matches torch's CUDA " + want.str() + " (major version mismatch):" + listing(ch.res),
      "install CUDA " + want.str() + ", or set DS_SKIP_CUDA_CHECK=1 to build anyway");
}

/// [cuda] version = "auto": the named toolkit, else the newest with torch's CUDA, else the newest.
Pick pick_auto(Choice& ch) {
  if (ch.named.candidate) return Pick{ch.named.candidate, ch.named.var + " points to it"};
  if (ch.torch_cuda)
    for (auto* c : ch.valid)
      if (c->toolkit->version == *ch.torch_cuda)
        return Pick{c, "newest toolkit with torch's CUDA " + ch.torch_cuda->str()};
  if (ch.valid.empty()) return Pick{};
  Candidate* c = ch.valid.front();
  if (ch.torch_cuda)
    ch.res.warnings.push_back("no toolkit has torch's CUDA " + ch.torch_cuda->str() + "; using CUDA " +
                              c->toolkit->version.str());
  return Pick{c, "newest valid toolkit"};
}

/// [cuda] version = "X.Y" or clauses: CUDA_HOME/CUDA_PATH's toolkit when it matches, else the newest that does.
Result<Pick> pick_matching(Choice& ch, const std::string& spec, const std::vector<VersionClause>& constraints) {
  auto matches = [&](const Candidate* c) {
    return std::all_of(constraints.begin(), constraints.end(), [&](auto& k) { return k.accepts(c->toolkit->version); });
  };
  if (ch.named.candidate && !matches(ch.named.candidate))
    return ch.conflict("which does not match [cuda] version = \"" + spec + "\"");
  Pick pick;
  for (auto* c : ch.valid)
    if (c->found_by.find("CUDA_HOME") != std::string::npos || c->found_by.find("CUDA_PATH") != std::string::npos) {
      if (matches(c)) pick = Pick{c, "matches " + spec + "; CUDA_HOME/CUDA_PATH points to it"};
      break;
    }
  for (auto* c : ch.valid)
    if (!pick.candidate && matches(c)) pick = Pick{c, "newest toolkit matching " + spec};
  for (auto* c : ch.valid)
    if (c != pick.candidate && !matches(c))
      c->verdict = "not chosen: CUDA " + c->toolkit->version.str() + " does not match " + spec;
  return pick;
}

/// Marks the pick and says of every other valid toolkit why it was not chosen.
Status settle(Choice& ch, const Pick& pick, const std::string& spec) {
  if (!pick.candidate) {
    std::string hint = spec == "auto" ? "install a CUDA toolkit (or set CUDA_HOME to one)"
                                      : "install a CUDA toolkit matching " + spec + " or change [cuda] version";
    return unsatisfied("no CUDA toolkit satisfies [cuda] version = \"" + spec + "\"; looked at:" + listing(ch.res),
                       hint);
  }
  const Version& chosen = pick.candidate->toolkit->version;
  pick.candidate->chosen = true;
  pick.candidate->verdict = "chosen: " + pick.why;
  for (auto* c : ch.valid)
    if (c != pick.candidate && c->verdict == "valid")
      c->verdict = c->toolkit->version < chosen ? "not chosen: older than CUDA " + chosen.str()
                                                : "not chosen: " + pick.why + " is CUDA " + chosen.str();
  if (ch.torch_cuda && spec != "torch" && chosen.major != ch.torch_cuda->major)
    ch.res.warnings.push_back(
        "torch's CUDA is " + ch.torch_cuda->str() + " but the chosen toolkit is CUDA " + chosen.str() +
        " (the ops reach only the driver, so this is fine for opforge_ops; not for torch extensions)");
  ch.res.chosen = pick.candidate->toolkit;
  return {};
}

}  // namespace

Result<Resolution> choose(Resolution res, const std::string& spec_in, const probe::Environment& env) {
  std::string spec(strings::trim(spec_in));
  if (spec.empty()) spec = "auto";
  std::vector<VersionClause> constraints;
  if (spec != "auto" && spec != "torch") constraints = OPFORGE_TRY(parse_spec(spec));
  Choice ch{res, env, valid_newest_first(res), OPFORGE_TRY(named_toolkit(res, env)),
            res.torch ? res.torch->cuda : std::nullopt};
  Pick pick = spec == "torch"  ? OPFORGE_TRY(pick_for_torch(ch))
              : spec == "auto" ? pick_auto(ch)
                               : OPFORGE_TRY(pick_matching(ch, spec, constraints));
  OPFORGE_CHECK(settle(ch, pick, spec));
  return res;
}

Result<Resolution> resolve(probe::Machine m, const std::string& version_spec, const std::string& python) {
  std::string spec(strings::trim(version_spec));
  // Reject a malformed spec before spending a python start on it.
  if (!spec.empty() && spec != "auto" && spec != "torch") OPFORGE_TRY(parse_spec(spec));
  auto torch = read_torch(m, python);
  return choose(discover(m, torch), spec, m.env);
}

bool names_user_toolkit(const Error& e) {
  return e.message.starts_with("CUDA_HOME=") || e.message.starts_with("CUDA_PATH=");
}

std::map<std::string, std::string> exports(const Toolkit& tk, const probe::Environment& env) {
  auto prepend = [](const fs::path& dir, const std::optional<std::string>& cur) {
    return (cur && !cur->empty()) ? dir.string() + ":" + *cur : dir.string();
  };
  return {{"CUDA_HOME", tk.root.string()},
          {"PATH", prepend(tk.root / "bin", env.get("PATH"))},
          {"LD_LIBRARY_PATH", prepend(tk.lib_dir, env.get("LD_LIBRARY_PATH"))}};
}

}  // namespace opforge::cuda
