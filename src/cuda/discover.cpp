#include "cuda/discover.h"

#include <algorithm>
#include <set>

#include "cuda/versions.h"
#include "probe/json_cache.h"

namespace opforge::cuda {

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
      auto r = probe::run_remembered(
          m, probe::Command{.argv = {tk.nvcc.string(), "--version"}, .timeout = std::chrono::milliseconds(10000)});
      // An nvcc that does not answer its version in 10 s would hang every compile: reject the
      // toolkit rather than take the version from cuda.h (nvcc answers in well under a second).
      if (r && r->timed_out) return "rejected: bin/nvcc --version did not answer within 10 s";
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

}  // namespace opforge::cuda
