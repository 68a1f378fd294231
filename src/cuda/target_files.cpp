#include "cuda/target_files.h"

#include <chrono>

#include <nlohmann/json.hpp>

#include "cache/layout.h"
#include "cuda/torch.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/json_read.h"
#include "util/strings.h"
#include "wheel/wheel.h"

namespace opforge::cuda {

namespace {

using Json = nlohmann::json;

constexpr std::string_view kRuntime = "nvidia-cuda-runtime";

/// The folder under site/nvidia that NVIDIA's wheels of a CUDA major install into ("cu13").
std::string home_of(const Version& cuda) { return "cu" + std::to_string(cuda.major); }

/// pip's --platform values for `p`: pip before 24 takes a tag only as written, so the wheel's
/// manylinux2014 tag and its PEP 600 spellings are all given.
std::vector<std::string> platform_args(const target::Platform& p) {
  std::vector<std::string> out;
  for (const std::string& tag : {std::string(p.pypi_platform), "manylinux_2_17_" + std::string(p.name),
                                 "manylinux_2_28_" + std::string(p.name)}) {
    out.push_back("--platform");
    out.push_back(tag);
  }
  return out;
}

Json manifest_json(const TargetFiles& t) {
  Json pk = Json::array();
  for (auto& k : t.packages)
    pk.push_back({{"name", k.name}, {"version", k.version}, {"file", k.file}, {"sha256", k.sha256}});
  return {{"platform", t.platform},       {"release", t.release},
          {"requirement", t.requirement}, {"release_source", t.release_source},
          {"python", t.python},           {"packages", pk}};
}

bool complete_files(const probe::FileSystem& fs, const TargetFiles& t) {
  return fs.resolved_type(t.lib_dir / "libcudart_static.a") == probe::FileType::regular &&
         fs.resolved_type(t.lib_dir / "libcudart.so") == probe::FileType::regular &&
         fs.resolved_type(t.include_dir / "cuda_runtime.h") == probe::FileType::regular;
}

bool complete(const probe::FileSystem& fs, const TargetFiles& t) {
  return fs.resolved_type(t.dir / kManifest) == probe::FileType::regular && complete_files(fs, t);
}

void read_packages(const probe::FileSystem& fs, const fs::path& dir, std::vector<ToolkitPackage>& out) {
  auto text = fs.read_file(dir / kManifest);
  if (!text) return;
  auto j = util::json_parse(*text);
  out.clear();
  if (const Json* packages = util::json_read::array(j, "packages"))
    for (auto& k : *packages)
      if (k.is_object())
        out.push_back({util::json_read::text_or(k, "name"), util::json_read::text_or(k, "version"),
                       util::json_read::text_or(k, "file"), util::json_read::text_or(k, "sha256")});
}

/// Downloads `requirement`'s wheel for `p` (no dependencies) and installs it into tmp/site, noting
/// each downloaded wheel in `packages`; `what` names it in messages ("the aarch64 CUDA runtime").
Status pip_fetch(probe::Machine m, const std::string& python, const target::Platform& p, const std::string& requirement,
                 const std::vector<std::string>& extra, const std::string& what, std::vector<ToolkitPackage>& packages,
                 const fs::path& tmp, const std::function<void(std::string_view)>& on_line) {
  const fs::path wheels = tmp / "wheels";
  if (on_line) on_line("fetching " + what + " from PyPI: " + requirement);
  std::vector<std::string> dl{
      "download",     "--disable-pip-version-check", "--no-input", "--only-binary=:all:", "--no-deps", "--dest",
      wheels.string()};
  for (auto& a : platform_args(p)) dl.push_back(a);
  dl.insert(dl.end(), extra.begin(), extra.end());
  dl.push_back(requirement);
  auto got = OPFORGE_TRY(pip(m, python, dl));
  if (!got.ok())
    return unsatisfied("could not fetch " + what + " from PyPI: `" + python + " -m pip download --platform " +
                           std::string(p.pypi_platform) + " " + requirement + "` failed; pip's last lines:\n" +
                           last_lines(got.out + got.err, 8),
                       "check the network and pip's index settings (PIP_INDEX_URL, pip.conf)");
  for (auto& file : OPFORGE_TRY(m.fs.list_directory(wheels))) {
    auto parts = wheel::parse_wheel_filename(file);
    if (!parts) continue;
    auto bytes = OPFORGE_TRY(m.fs.read_file(wheels / file, wheel::Limits{}.archive_bytes));
    packages.push_back({wheel::project_name(parts->name), parts->version, file, sha256_hex(bytes)});
  }
  std::vector<std::string> in{"install",      "--disable-pip-version-check",
                              "--no-input",   "--no-index",
                              "--find-links", wheels.string(),
                              "--no-deps",    "--only-binary=:all:",
                              "--target",     (tmp / "site").string(),
                              "--no-compile"};
  for (auto& a : platform_args(p)) in.push_back(a);
  in.insert(in.end(), extra.begin(), extra.end());
  in.push_back(requirement);
  auto done = OPFORGE_TRY(pip(m, python, in));
  if (!done.ok())
    return failure("`" + python + " -m pip install --target` of " + requirement +
                   " from the downloaded wheel failed; pip's last lines:\n" + last_lines(done.out + done.err, 8));
  return m.fs.remove_all(wheels);
}

/// Downloads and installs the runtime wheel for the target into `tmp`, then lays out include/ and lib/.
Status install_into(probe::Machine m, const Version& cuda, const target::Platform& p, TargetFiles& t,
                    const fs::path& tmp, const std::function<void(std::string_view)>& on_line) {
  OPFORGE_CHECK(
      pip_fetch(m, t.python, p, t.requirement, {}, "the " + t.platform + " CUDA runtime", t.packages, tmp, on_line));
  const fs::path home = fs::path("site") / "nvidia" / home_of(cuda);
  OPFORGE_CHECK(m.fs.create_symlink(home / "include", tmp / "include"));
  OPFORGE_CHECK(m.fs.create_symlink(home / "lib", tmp / "lib"));
  // A torch extension links -lcudart (the shared runtime): the wheel has only the versioned file,
  // as a toolkit's lib64 has the unversioned link beside it.
  const std::string soname = "libcudart.so." + std::to_string(cuda.major);
  if (m.fs.resolved_type(tmp / "lib" / soname) == probe::FileType::regular)
    OPFORGE_CHECK(m.fs.create_symlink(soname, tmp / "lib" / "libcudart.so"));
  TargetFiles laid = t;
  laid.dir = tmp;
  laid.include_dir = tmp / "include";
  laid.lib_dir = tmp / "lib";
  if (!complete_files(m.fs, laid))
    return failure(t.requirement + " for " + std::string(p.pypi_platform) + " holds no nvidia/" + home_of(cuda) +
                   "/lib/libcudart_static.a, lib/" + soname + " and include/cuda_runtime.h");
  return m.fs.write_file_atomic(tmp / kManifest, util::json_dump(manifest_json(t), 2) + "\n");
}

/// Makes `t.dir` complete under its lock: shared while it is complete (the hold the value keeps),
/// exclusive while `install` fills a partial folder beside it, renamed into place when done.
template <class T, class Complete, class Install>
Status provision_folder(probe::Machine m, T& t, Complete complete_fn, Install install,
                        const std::function<void(std::string_view)>& on_line) {
  OPFORGE_CHECK(m.fs.create_directories(t.dir.parent_path()));
  const fs::path lock_file = toolkit_lock(t.dir);
  auto waiting = [&] {
    if (on_line) on_line("waiting for another opforge process that provisions (or prunes) " + t.dir.string());
  };
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto shared = OPFORGE_TRY(probe::wait_for_shared_lock(m.fs, lock_file, waiting));
    if (complete_fn(t)) {
      read_packages(m.fs, t.dir, t.packages);
      t.present = true;
      t.hold = shared;
      OPFORGE_CHECK(m.fs.write_file_atomic(t.dir / cache::kLastUse, ""));
      return {};
    }
    shared.reset();
    auto lock = OPFORGE_TRY(probe::wait_for_lock(m.fs, lock_file, waiting));
    if (!complete_fn(t)) {
      const fs::path tmp = t.dir.parent_path() / (std::string(kPartialPrefix) + t.dir.filename().string());
      OPFORGE_CHECK(m.fs.remove_all(tmp));
      OPFORGE_CHECK(m.fs.create_directories(tmp));
      t.packages.clear();
      if (auto made = install(t, tmp); !made) {
        (void)m.fs.remove_all(tmp);
        return opforge::unexpected(made.error());
      }
      if (m.fs.type_of(t.dir) != probe::FileType::none) OPFORGE_CHECK(m.fs.remove_all(t.dir));
      OPFORGE_CHECK(m.fs.rename(tmp, t.dir));
      (void)probe::record_size(m.fs, t.dir, probe::tree_bytes(m.fs, t.dir));
      t.fetched = true;
    }
  }
  return failure(t.dir.string() + " was removed three times while this build waited",
                 "is `opforge cache prune` running in a loop?");
}

}  // namespace

std::string runtime_release(probe::Machine m, const Toolkit& tk, std::string& source) {
  // A toolkit assembled from NVIDIA's wheels keeps their dist-info: the runtime's exact release.
  if (auto names = m.fs.list_directory(tk.root / "dist-info"))
    for (auto& n : *names)
      if (n.starts_with("nvidia_cuda_runtime-") && n.ends_with(".dist-info")) {
        auto v = n.substr(20, n.size() - 20 - 10);
        if (parse_version(v)) {
          source = (tk.root / "dist-info" / n).string();
          return v;
        }
      }
  // NVIDIA's installers write version.json with each component's release.
  if (auto text = m.fs.read_file(tk.root / "version.json")) {
    auto j = util::json_parse(*text);
    if (const auto* cudart = util::json_read::object(j, "cuda_cudart"))
      if (auto v = util::json_read::text(*cudart, "version"); v && parse_version(*v)) {
        source = (tk.root / "version.json").string();
        return *v;
      }
  }
  source = "the toolkit's major.minor";
  return tk.version.str() + ".*";
}

Result<TargetFiles> describe_target_files(probe::Machine m, const Toolkit& tk, const target::Platform& platform,
                                          const fs::path& cache, const std::string& python) {
  if (cache.empty())
    return unsatisfied("a cross-build's CUDA runtime for " + std::string(platform.name) + " needs a cache folder",
                       "set OPFORGE_CACHE_DIR or HOME");
  TargetFiles t;
  t.platform = std::string(platform.name);
  t.release = runtime_release(m, tk, t.release_source);
  t.requirement = std::string(kRuntime) + "==" + t.release;
  t.python = python;
  // A wildcard release is only a request: the folder is named by the major.minor then.
  std::string label = t.release;
  if (label.ends_with(".*")) label.resize(label.size() - 2);
  t.dir = cache::folder(cache, cache::Kind::toolkit) / (std::string(platform.nvcc_target_dir) + "-" + label);
  t.include_dir = t.dir / "include";
  t.lib_dir = t.dir / "lib";
  t.present = complete(m.fs, t);
  if (t.present) read_packages(m.fs, t.dir, t.packages);
  return t;
}

Result<TargetFiles> provision_target_files(probe::Machine m, const Toolkit& tk, const target::Platform& platform,
                                           const fs::path& cache, const std::string& python,
                                           const std::function<void(std::string_view)>& on_line) {
  TargetFiles t = OPFORGE_TRY(describe_target_files(m, tk, platform, cache, python));
  OPFORGE_CHECK(provision_folder(
      m, t, [&m](const TargetFiles& x) { return complete(m.fs, x); },
      [&](TargetFiles& x, const fs::path& tmp) { return install_into(m, tk.version, platform, x, tmp, on_line); },
      on_line));
  return t;
}

std::string target_files_json_text(const TargetFiles& t) {
  Json j = manifest_json(t);
  j["dir"] = t.dir.string();
  j["present"] = t.present;
  j["fetched"] = t.fetched;
  return util::json_dump(j);
}

namespace {

Json torch_manifest_json(const TargetTorch& t) {
  Json pk = Json::array();
  for (auto& k : t.packages)
    pk.push_back({{"name", k.name}, {"version", k.version}, {"file", k.file}, {"sha256", k.sha256}});
  return {{"platform", t.platform},
          {"version", t.version},
          {"python_tag", t.python_tag},
          {"requirement", t.requirement},
          {"cuda", t.cuda},
          {"python", t.python},
          {"packages", pk}};
}

bool torch_complete(const probe::FileSystem& fs, const TargetTorch& t, bool manifest = true) {
  return (!manifest || fs.resolved_type(t.dir / kManifest) == probe::FileType::regular) &&
         fs.resolved_type(t.torch_dir / "include" / "torch" / "extension.h") == probe::FileType::regular &&
         fs.resolved_type(t.torch_dir / "lib" / "libtorch.so") == probe::FileType::regular &&
         fs.resolved_type(t.torch_dir / "version.py") == probe::FileType::regular;
}

std::string cuda_of(const probe::FileSystem& fs, const fs::path& torch_dir) {
  auto text = fs.read_file(torch_dir / "version.py");
  if (!text) return {};
  auto v = parse_torch_version_py(*text);
  return v.cuda ? v.cuda->str() : std::string();
}

}  // namespace

Result<TargetTorch> describe_target_torch(probe::Machine m, const std::string& torch_version,
                                          std::pair<int, int> python_version, const target::Platform& platform,
                                          const fs::path& cache, const std::string& python) {
  if (cache.empty())
    return unsatisfied("a cross-build's torch for " + std::string(platform.name) + " needs a cache folder",
                       "set OPFORGE_CACHE_DIR or HOME");
  TargetTorch t;
  t.platform = std::string(platform.name);
  // PyPI has public releases only: "2.15.0+cu132" (download.pytorch.org's) is PyPI's 2.15.0.
  t.version = torch_version.substr(0, torch_version.find('+'));
  if (!parse_version(t.version))
    return unsatisfied("torch " + torch_version + " is not a release PyPI has for " + t.platform,
                       "build with a released torch (pip install torch==X.Y.Z)");
  t.python_tag = "cp" + std::to_string(python_version.first) + std::to_string(python_version.second);
  t.requirement = "torch==" + t.version;
  t.python = python;
  t.dir = cache::folder(cache, cache::Kind::toolkit) / ("torch-" + t.platform + "-" + t.python_tag + "-" + t.version);
  t.torch_dir = t.dir / "site" / "torch";
  t.present = torch_complete(m.fs, t);
  if (t.present) {
    read_packages(m.fs, t.dir, t.packages);
    t.cuda = cuda_of(m.fs, t.torch_dir);
  }
  return t;
}

Result<TargetTorch> provision_target_torch(probe::Machine m, const std::string& torch_version,
                                           std::pair<int, int> python_version, const target::Platform& platform,
                                           const fs::path& cache, const std::string& python,
                                           const std::function<void(std::string_view)>& on_line) {
  TargetTorch t = OPFORGE_TRY(describe_target_torch(m, torch_version, python_version, platform, cache, python));
  const std::vector<std::string> extra{
      "--python-version", std::to_string(python_version.first) + "." + std::to_string(python_version.second),
      "--implementation", "cp"};
  OPFORGE_CHECK(provision_folder(
      m, t, [&m](const TargetTorch& x) { return torch_complete(m.fs, x); },
      [&](TargetTorch& x, const fs::path& tmp) -> Status {
        OPFORGE_CHECK(pip_fetch(m, x.python, platform, x.requirement, extra, "torch for " + x.platform, x.packages, tmp,
                                on_line));
        TargetTorch laid = x;
        laid.torch_dir = tmp / "site" / "torch";
        if (!torch_complete(m.fs, laid, false))
          return failure(x.requirement + " for " + std::string(platform.name) +
                         " holds no torch/include/torch/extension.h, torch/lib/libtorch.so and torch/version.py");
        x.cuda = cuda_of(m.fs, laid.torch_dir);
        return m.fs.write_file_atomic(tmp / kManifest, util::json_dump(torch_manifest_json(x), 2) + "\n");
      },
      on_line));
  t.cuda = cuda_of(m.fs, t.torch_dir);
  return t;
}

std::string target_torch_json_text(const TargetTorch& t) {
  Json j = torch_manifest_json(t);
  j["dir"] = t.dir.string();
  j["present"] = t.present;
  j["fetched"] = t.fetched;
  return util::json_dump(j);
}

}  // namespace opforge::cuda
