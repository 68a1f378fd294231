#include "cuda/discover.h"

#include <algorithm>
#include <set>

#include "cuda/versions.h"
#include "probe/json_cache.h"
#include "settings/settings.h"

namespace opforge::cuda {

std::string_view layout_name(Layout l) {
  switch (l) {
    case Layout::nvidia: return "NVIDIA";
    case Layout::distribution: return "distribution package";
    case Layout::conda: return "conda";
    case Layout::pypi: return "PyPI wheels";
  }
  return "NVIDIA";
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

/// `nvcc` with wrapper scripts followed (at most 4 hops), symlinks resolved.
fs::path follow_wrappers(const probe::FileSystem& fs, fs::path nvcc) {
  for (int hops = 0; hops < 4; ++hops) {
    auto next = wrapped_nvcc(fs, nvcc);
    if (!next) break;
    nvcc = *next;
  }
  auto canon = fs.canonical(nvcc);
  return canon ? *canon : nvcc;
}

/// The first of `dirs` holding `file` (or, `prefix`: a file whose name starts with it).
fs::path first_holding(const probe::FileSystem& fs, const std::vector<fs::path>& dirs, const std::string& file,
                       bool prefix) {
  for (auto& d : dirs) {
    if (!prefix) {
      if (exists(fs, d / file)) return d;
      continue;
    }
    auto names = fs.list_directory(d);
    if (names && std::any_of(names->begin(), names->end(), [&](auto& n) { return n.starts_with(file); })) {
      auto canon = fs.canonical(d);
      return canon ? *canon : d;
    }
  }
  return {};
}

/// Where a toolkit's headers and libraries may be, in the order looked at: the folder's own,
/// then those of the folder the real nvcc is in (a wrapper's toolkit), those its nvcc.profile
/// names (Debian's -L/usr/lib/x86_64-linux-gnu), a pip wheel's sibling package, and last for
/// headers the host compiler's own /usr/include, which nvcc reaches without any -I (Debian's
/// cuda.h is there, its profile names no INCLUDES).
struct Places {
  std::vector<fs::path> include, lib;
};

Places places(const probe::FileSystem& fs, const fs::path& root, const fs::path& real_root,
              const NvccProfile& profile) {
  Places p;
  std::vector<fs::path> roots{root};
  if (real_root != root) roots.push_back(real_root);
  for (const fs::path& r : roots) {
    p.include.push_back(r / "include");
    for (auto& d : target_dirs(fs, r, "include")) p.include.push_back(d);
    p.lib.push_back(r / "lib64");
    p.lib.push_back(r / "lib");
    for (auto& d : target_dirs(fs, r, "lib")) p.lib.push_back(d);
  }
  p.include.insert(p.include.end(), profile.include_dirs.begin(), profile.include_dirs.end());
  p.lib.insert(p.lib.end(), profile.library_dirs.begin(), profile.library_dirs.end());
  // pip wheels (nvidia-cuda-runtime-cu12) keep cuda.h in a sibling package.
  p.include.push_back(root.parent_path() / "cuda_runtime" / "include");
  p.lib.push_back(root.parent_path() / "cuda_runtime" / "lib");
  if (!profile.library_dirs.empty()) p.include.push_back("/usr/include");
  return p;
}

bool under(const fs::path& p, const fs::path& dir) {
  auto rel = p.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != "..";
}

Layout layout_of(const probe::FileSystem& fs, const Toolkit& tk) {
  if (tk.root.parent_path().filename() == "nvidia") return Layout::pypi;
  if (exists(fs, tk.root / "conda-meta")) return Layout::conda;
  // A wrapper script in bin/ (Debian's /usr/bin/nvcc), or headers and libraries outside the
  // toolkit's folders: the distributions' three trees.
  auto canon = fs.canonical(tk.nvcc);
  const bool wrapper = (canon ? *canon : tk.nvcc) != tk.real_nvcc;
  const fs::path real_root = tk.real_nvcc.parent_path().parent_path();
  auto inside = [&](const fs::path& p) { return under(p, tk.root) || under(p, real_root); };
  return !wrapper && inside(tk.include_dir) && inside(tk.lib_dir) ? Layout::nvidia : Layout::distribution;
}

struct Finder {
  probe::Machine m;
  Resolution res;
  std::set<std::string> seen;

  void add(const fs::path& root, Origin origin, const std::string& found_by) {
    auto canon = m.fs.canonical(root);
    fs::path real = canon ? *canon : root;
    if (!seen.insert(real.string()).second) {
      for (auto& c : res.candidates)
        if ((c.toolkit ? c.toolkit->root : c.path) == real) merge_found_by(c, origin, found_by);
      return;
    }
    Candidate c;
    c.path = real;
    c.origins = {origin};
    c.found_by = found_by;
    if (auto rejected = validate(real, c)) {
      c.verdict = Verdict::rejected;
      c.why = *rejected;
    } else {
      c.verdict = Verdict::valid;
    }
    // One toolkit reached from two folders (CUDA_HOME=/usr and /usr/lib/nvidia-cuda-toolkit, both
    // running one nvcc) is listed once, under the folder found first.
    if (c.toolkit)
      for (auto& other : res.candidates)
        if (other.toolkit && other.toolkit->real_nvcc == c.toolkit->real_nvcc) {
          merge_found_by(other, origin, found_by + " as " + real.string());
          return;
        }
    res.candidates.push_back(std::move(c));
  }

  static void merge_found_by(Candidate& c, Origin origin, const std::string& found_by) {
    if (!c.found_through(origin)) c.origins.push_back(origin);
    if (c.found_by.find(found_by) == std::string::npos) c.found_by += ", " + found_by;
  }

  /// Fills c.toolkit when valid; returns why it is rejected otherwise.
  std::optional<std::string> validate(const fs::path& root, Candidate& c) {
    if (auto type = m.fs.resolved_type(root); type != probe::FileType::directory)
      return type == probe::FileType::none ? "no such folder" : "not a folder";
    Toolkit tk;
    tk.root = root;
    tk.nvcc = root / "bin" / "nvcc";
    if (!m.fs.is_executable(tk.nvcc)) return "no executable bin/nvcc";
    tk.real_nvcc = follow_wrappers(m.fs, tk.nvcc);
    if (!m.fs.is_executable(tk.real_nvcc))
      return "bin/nvcc runs " + tk.real_nvcc.string() + ", which is not an executable";
    const fs::path real_root = tk.real_nvcc.parent_path().parent_path();
    NvccProfile profile;
    if (auto t = m.fs.read_file(tk.real_nvcc.parent_path() / "nvcc.profile")) profile = parse_nvcc_profile(*t);
    const Places p = places(m.fs, root, real_root, profile);
    tk.include_dir = first_holding(m.fs, p.include, "cuda.h", false);
    if (tk.include_dir.empty())
      return "no cuda.h in include/, targets/*/include/ or the folders its nvcc.profile names";
    tk.lib_dir = first_holding(m.fs, p.lib, "libcudart", true);
    if (tk.lib_dir.empty())
      return "no libcudart* in lib64/, lib/, targets/*/lib/ or the folders its nvcc.profile names";
    tk.layout = layout_of(m.fs, tk);
    if (auto rejected = read_version(root, real_root, tk)) return *rejected;
    if (tk.version_source.empty()) return "no version in version.json, version.txt, nvcc --version or cuda.h";
    c.toolkit = tk;
    return std::nullopt;
  }

  /// version.json > version.txt (the folder's, then the real nvcc's) > nvcc --version > cuda.h.
  /// The version from the layout's files; an nvcc that does not answer `--version` in 10 s is a
  /// reason to reject the toolkit (returned), not to guess from cuda.h: it would hang every compile.
  std::optional<std::string> read_version(const fs::path& root, const fs::path& real_root, Toolkit& tk) {
    std::vector<fs::path> roots{root};
    if (real_root != root) roots.push_back(real_root);
    for (const fs::path& r : roots) {
      if (auto t = m.fs.read_file(r / "version.json"))
        if (auto v = parse_version_json(*t)) {
          tk.version = *v;
          tk.version_source = "version.json";
          return std::nullopt;
        }
      if (auto t = m.fs.read_file(r / "version.txt"))
        if (auto v = parse_version_txt(*t)) {
          tk.version = *v;
          tk.version_source = "version.txt";
          return std::nullopt;
        }
    }
    auto r = probe::run_remembered(
        m, probe::Command{.argv = {tk.nvcc.string(), "--version"}, .timeout = std::chrono::milliseconds(10000)});
    if (r && r->timed_out) return "bin/nvcc --version did not answer within 10 s";
    if (r && r->ok()) {
      tk.nvcc_version_text = r->out;
      if (auto v = parse_nvcc_version(r->out)) {
        tk.version = *v;
        tk.version_source = "nvcc --version";
        return std::nullopt;
      }
    }
    if (auto h = m.fs.read_file(tk.include_dir / "cuda.h"))
      if (auto v = parse_cuda_h(*h)) {
        tk.version = *v;
        tk.version_source = "cuda.h";
        return std::nullopt;
      }
    return std::nullopt;
  }

  void from_glob(const fs::path& dir, std::string_view prefix, Origin origin) {
    auto names = m.fs.list_directory(dir);
    if (!names) return;
    for (auto& n : *names)
      if (n.starts_with(prefix) && m.fs.resolved_type(dir / n) == probe::FileType::directory)
        add(dir / n, origin, std::string(origin_name(origin)));
  }
};

}  // namespace

std::string_view origin_name(Origin o) {
  switch (o) {
    case Origin::cuda_home: return "CUDA_HOME";
    case Origin::cuda_path: return "CUDA_PATH";
    case Origin::nvcc_on_path: return "nvcc on PATH";
    case Origin::usr_local_cuda: return "/usr/local/cuda";
    case Origin::usr_local_cuda_n: return "/usr/local/cuda-*";
    case Origin::opt_cuda: return "/opt/cuda*";
    case Origin::conda_prefix: return "CONDA_PREFIX";
    case Origin::pip_wheel: return "pip wheel";
  }
  return "?";
}

std::optional<Origin> origin_from_name(std::string_view name) {
  for (Origin o : {Origin::cuda_home, Origin::cuda_path, Origin::nvcc_on_path, Origin::usr_local_cuda,
                   Origin::usr_local_cuda_n, Origin::opt_cuda, Origin::conda_prefix, Origin::pip_wheel})
    if (origin_name(o) == name) return o;
  return std::nullopt;
}

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::valid: return "valid";
    case Verdict::rejected: return "rejected";
    case Verdict::chosen: return "chosen";
    case Verdict::not_chosen: return "not chosen";
  }
  return "?";
}

Resolution discover(probe::Machine m, const std::optional<TorchInfo>& torch) {
  Finder f{m, {}, {}};
  f.res.torch = torch;
  for (auto& [var, value] : settings::toolkit_roots(m.env)) f.add(fs::path(value), *origin_from_name(var), var);
  if (const std::string path = settings::path(m.env); !path.empty()) {
    if (auto nvcc = probe::find_on_path(m.fs, "nvcc", path)) {
      const fs::path real = follow_wrappers(m.fs, *nvcc);
      const bool wrapper = wrapped_nvcc(m.fs, *nvcc).has_value();
      const std::string name(origin_name(Origin::nvcc_on_path));
      std::string how = wrapper ? name + " (wrapper script " + nvcc->string() + ")" : name;
      // The folder of the nvcc that runs, when it is a whole toolkit (a wrapper such as
      // /usr/local/bin/nvcc would make /usr/local look like one). Debian's real nvcc sits in a
      // folder without headers: then the folder above `which nvcc` (/usr), as torch's
      // cpp_extension derives CUDA_HOME, when its include/ holds cuda.h.
      const fs::path real_root = real.parent_path().parent_path();
      const fs::path above = nvcc->parent_path().parent_path();
      std::vector<fs::path> own{real_root / "include"};
      for (auto& d : target_dirs(m.fs, real_root, "include")) own.push_back(d);
      const bool whole = !first_holding(m.fs, own, "cuda.h", false).empty();
      f.add(!whole && exists(m.fs, above / "include" / "cuda.h") ? above : real_root, Origin::nvcc_on_path, how);
    }
  }
  f.add("/usr/local/cuda", Origin::usr_local_cuda, std::string(origin_name(Origin::usr_local_cuda)));
  f.from_glob("/usr/local", "cuda-", Origin::usr_local_cuda_n);
  f.from_glob("/opt", "cuda", Origin::opt_cuda);
  if (auto conda = settings::conda_prefix(m.env))
    f.add(*conda, Origin::conda_prefix, std::string(origin_name(Origin::conda_prefix)));
  if (torch && !torch->site_packages.empty()) {
    auto nv = torch->site_packages / "nvidia";
    if (auto names = m.fs.list_directory(nv))
      for (auto& n : *names)
        if (m.fs.is_executable(nv / n / "bin" / "nvcc"))
          f.add(nv / n, Origin::pip_wheel,
                std::string(origin_name(Origin::pip_wheel)) + " in " + torch->site_packages.string());
  }
  return f.res;
}

}  // namespace opforge::cuda
