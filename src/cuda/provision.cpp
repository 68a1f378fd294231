#include "cuda/provision.h"

#include <chrono>

#include <nlohmann/json.hpp>

#include "cache/layout.h"
#include "cuda/resolve.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/json_read.h"
#include "util/strings.h"
#include "wheel/wheel.h"

namespace opforge::cuda {

namespace {

using Json = nlohmann::json;

/// The packages pip resolves the requirement to (the cuda-toolkit meta-package pins them
/// exactly), for messages written before pip has run.
std::string expected_packages() {
  return "cuda-toolkit, nvidia-cuda-nvcc, nvidia-cuda-crt, nvidia-nvvm, nvidia-cuda-runtime, nvidia-cuda-cccl";
}

/// torch's METADATA beside its package folder (torch-<version>.dist-info), if any.
std::optional<std::pair<std::string, std::string>> torch_metadata(const probe::FileSystem& fs, const TorchInfo& torch) {
  fs::path site = torch.torch_dir.parent_path();
  auto names = fs.list_directory(site);
  if (!names) return std::nullopt;
  for (auto& n : *names) {
    if (!n.starts_with("torch-") || !n.ends_with(".dist-info")) continue;
    if (auto text = fs.read_file(site / n / "METADATA")) return std::pair{n + "/METADATA", *text};
  }
  return std::nullopt;
}

/// "nvidia_cuda_nvcc-13.2.86-py3-none-manylinux_2_27_x86_64.whl" → "nvidia-cuda-nvcc" and "13.2.86".
std::optional<std::pair<std::string, std::string>> wheel_name_version(const std::string& file) {
  auto parts = wheel::parse_wheel_filename(file);
  if (!parts) return std::nullopt;
  return std::pair{wheel::project_name(parts->name), parts->version};
}

Json manifest_json(const Provision& p) {
  Json pk = Json::array();
  for (auto& k : p.packages)
    pk.push_back({{"name", k.name}, {"version", k.version}, {"file", k.file}, {"sha256", k.sha256}});
  return {{"cuda", p.cuda.str()},
          {"requirement", p.requirement},
          {"requirement_source", p.requirement_source},
          {"python", p.python},
          {"packages", pk}};
}

/// Reads <dir>/opforge-toolkit.json into `p` (packages, requirement); false when unreadable.
bool read_manifest(const probe::FileSystem& fs, const fs::path& dir, Provision& p) {
  auto text = fs.read_file(dir / kManifest);
  if (!text) return false;
  auto j = util::json_parse(*text);
  const Json* packages = util::json_read::array(j, "packages");
  if (!packages) return false;
  auto str = [](const Json& o, const char* k) { return util::json_read::text_or(o, k); };
  if (auto v = parse_version(str(j, "cuda"))) p.cuda = *v;
  if (p.requirement.empty()) p.requirement = str(j, "requirement");
  if (p.requirement_source.empty()) p.requirement_source = str(j, "requirement_source");
  if (p.python.empty()) p.python = str(j, "python");
  p.packages.clear();
  for (auto& k : *packages)
    if (k.is_object()) p.packages.push_back({str(k, "name"), str(k, "version"), str(k, "file"), str(k, "sha256")});
  return true;
}

/// A folder that holds a finished toolkit: the manifest is written last, before the rename.
bool complete(const probe::FileSystem& fs, const fs::path& dir) {
  return fs.resolved_type(dir / kManifest) == probe::FileType::regular && fs.is_executable(dir / "bin" / "nvcc");
}

/// Relative links that make `home` (site/nvidia/cu13) a CUDA_HOME at `root`: bin, include and nvvm
/// point into it; lib64 is a folder of links with the unversioned libcudart.so that `-lcudart`
/// needs (the wheel ships only libcudart.so.13); lib points to lib64.
Status lay_out(probe::FileSystem& fs, const fs::path& root, const fs::path& home_rel) {
  for (const char* d : {"bin", "include", "nvvm"}) OPFORGE_CHECK(fs.create_symlink(home_rel / d, root / d));
  OPFORGE_CHECK(fs.create_directories(root / "lib64"));
  auto libs = OPFORGE_TRY(fs.list_directory(root / home_rel / "lib"));
  std::string soname;
  for (auto& n : libs) {
    OPFORGE_CHECK(fs.create_symlink(".." / home_rel / "lib" / n, root / "lib64" / n));
    if (n.starts_with("libcudart.so.")) soname = n;
  }
  if (soname.empty())
    return failure("the installed wheels hold no libcudart.so.* in " + (root / home_rel / "lib").string());
  OPFORGE_CHECK(fs.create_symlink(soname, root / "lib64" / "libcudart.so"));
  OPFORGE_CHECK(fs.create_symlink("lib64", root / "lib"));
  return {};
}

/// The folder under site/nvidia holding bin/nvcc ("cu13" for CUDA 13), relative to `root`.
Result<fs::path> find_home(const probe::FileSystem& fs, const fs::path& root) {
  auto names = fs.list_directory(root / "site" / "nvidia");
  if (names)
    for (auto& n : *names)
      if (fs.is_executable(root / "site" / "nvidia" / n / "bin" / "nvcc")) return fs::path("site") / "nvidia" / n;
  return failure("the installed wheels hold no nvidia/*/bin/nvcc under " + (root / "site").string(),
                 "the cuda-toolkit extras may have changed; install the toolkit and point CUDA_HOME at it");
}

/// Downloads, hashes and installs the requirement into `tmp`, then checks nvcc's version.
Status install_into(probe::Machine m, Provision& p, const fs::path& tmp,
                    const std::function<void(std::string_view)>& on_line) {
  const fs::path wheels = tmp / "wheels";
  if (on_line) on_line("provisioning CUDA " + p.cuda.str() + " from PyPI: " + p.requirement);
  auto dl = OPFORGE_TRY(pip(m, p.python,
                            {"download", "--disable-pip-version-check", "--no-input", "--only-binary=:all:", "--dest",
                             wheels.string(), p.requirement}));
  if (!dl.ok())
    return unsatisfied("could not fetch CUDA " + p.cuda.str() + " from PyPI: `" + p.python + " -m pip download " +
                           p.requirement + "` failed (" + expected_packages() + "); pip's last lines:\n" +
                           last_lines(dl.out + dl.err, 8),
                       "check the network and pip's index settings (PIP_INDEX_URL, pip.conf), or install CUDA " +
                           p.cuda.str() + " and point CUDA_HOME at it");
  for (auto& file : OPFORGE_TRY(m.fs.list_directory(wheels))) {
    auto nv = wheel_name_version(file);
    if (!nv) continue;
    auto bytes = OPFORGE_TRY(m.fs.read_file(wheels / file, wheel::Limits{}.archive_bytes));
    p.packages.push_back({nv->first, nv->second, file, sha256_hex(bytes)});
  }
  auto in = OPFORGE_TRY(
      pip(m, p.python,
          {"install", "--disable-pip-version-check", "--no-input", "--no-index", "--find-links", wheels.string(),
           "--target", (tmp / "site").string(), "--no-compile", "--no-warn-script-location", p.requirement}));
  if (!in.ok())
    return failure("`" + p.python + " -m pip install --target` of " + p.requirement +
                   " from the downloaded wheels failed; pip's last lines:\n" + last_lines(in.out + in.err, 8));
  OPFORGE_CHECK(m.fs.remove_all(wheels));
  fs::path home = OPFORGE_TRY(find_home(m.fs, tmp));
  OPFORGE_CHECK(lay_out(m.fs, tmp, home));
  auto nvcc = OPFORGE_TRY(m.proc.run(
      probe::Command{.argv = {(tmp / "bin" / "nvcc").string(), "--version"}, .timeout = std::chrono::seconds(60)}));
  auto v = nvcc.ok() ? parse_nvcc_version(nvcc.out) : std::nullopt;
  if (!v || *v != p.cuda)
    return failure("the provisioned nvcc is not CUDA " + p.cuda.str() + ": `nvcc --version` said:\n" +
                   last_lines(nvcc.out + nvcc.err, 4));
  std::string full = p.cuda.str();
  for (auto& k : p.packages)
    if (k.name == "nvidia-cuda-nvcc") full = k.version;
  OPFORGE_CHECK(m.fs.write_file_atomic(
      tmp / "version.json", util::json_dump(Json{{"cuda", {{"name", "CUDA SDK"}, {"version", full}}}}, 2) + "\n"));
  return m.fs.write_file_atomic(tmp / kManifest, util::json_dump(manifest_json(p), 2) + "\n");
}

}  // namespace

std::string last_lines(const std::string& text, std::size_t n) {
  auto lines = strings::split(strings::trim(text), '\n');
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(n));
  return strings::join(lines, "\n");
}

Result<probe::ProcessResult> pip(probe::Machine m, const std::string& python, std::vector<std::string> args) {
  std::vector<std::string> argv{python, "-m", "pip"};
  argv.insert(argv.end(), args.begin(), args.end());
  return m.proc.run(probe::Command{.argv = argv, .timeout = std::chrono::minutes(30)});
}

std::string toolkit_requirement(std::string_view metadata, const Version& cuda) {
  const std::string base = "cuda-toolkit[" + std::string(kToolkitExtras) + "]";
  for (auto line : strings::split(metadata, '\n')) {
    std::string_view l = strings::trim(line);
    if (!l.starts_with("Requires-Dist:")) continue;
    l = strings::trim(l.substr(14));
    if (!l.starts_with("cuda-toolkit")) continue;
    auto eq = l.find("==");
    if (eq == std::string_view::npos) continue;
    auto rest = l.substr(eq + 2);
    auto end = rest.find_first_of("; ,");
    std::string pin(strings::trim(rest.substr(0, end)));
    auto v = parse_version(pin);
    if (!v || pin.find('*') != std::string::npos) continue;
    if (v->major == cuda.major && v->minor == cuda.minor) return base + "==" + pin;
  }
  return base + "==" + cuda.str() + ".*";
}

Status check_provisionable(const Version& cuda) {
  if (cuda.major >= 13) return {};
  return unsatisfied("[cuda] provision = \"pypi\": PyPI has no nvcc for CUDA " + cuda.str() + ": NVIDIA's CUDA " +
                         std::to_string(cuda.major) + " wheels (nvidia-cuda-nvcc-cu" + std::to_string(cuda.major) +
                         ") hold only ptxas, no nvcc driver and no cicc",
                     "install CUDA " + cuda.str() + " and point CUDA_HOME at it (or use a torch built for CUDA 13)");
}

std::string provision_json_text(const Provision& p) {
  Json j = manifest_json(p);
  j["dir"] = p.dir.string();
  j["present"] = p.present;
  j["fetched"] = p.fetched;
  return util::json_dump(j);
}

fs::path toolkit_lock(const fs::path& dir) { return cache::entry_lock(dir); }

fs::path provision_lock(const fs::path& cache, const Version& cuda) {
  return toolkit_lock(cache::folder(cache, cache::Kind::toolkit) / cuda.str());
}

Result<Provision> describe_provision(probe::Machine m, const TorchInfo& torch, const fs::path& cache) {
  if (!torch.cuda)
    return unsatisfied("[cuda] provision = \"pypi\" needs torch's CUDA version, but " +
                           (torch.torch_version ? "torch " + *torch.torch_version + " is a CPU-only build"
                                                : "torch is not installed for " + torch.python),
                       "install a CUDA-enabled torch for the project's Python");
  OPFORGE_CHECK(check_provisionable(*torch.cuda));
  if (cache.empty())
    return unsatisfied("[cuda] provision = \"pypi\" needs a cache folder", "set OPFORGE_CACHE_DIR or HOME");
  Provision p;
  p.cuda = *torch.cuda;
  p.python = torch.python;
  p.dir = cache::folder(cache, cache::Kind::toolkit) / p.cuda.str();
  if (auto meta = torch_metadata(m.fs, torch)) {
    p.requirement = toolkit_requirement(meta->second, p.cuda);
    p.requirement_source = meta->first;
  } else {
    p.requirement = toolkit_requirement("", p.cuda);
    p.requirement_source = "torch/version.py";
  }
  p.present = complete(m.fs, p.dir) && read_manifest(m.fs, p.dir, p);
  return p;
}

Result<Provision> provision(probe::Machine m, const TorchInfo& torch, const fs::path& cache,
                            const std::function<void(std::string_view)>& on_line) {
  Provision p = OPFORGE_TRY(describe_provision(m, torch, cache));
  OPFORGE_CHECK(m.fs.create_directories(p.dir.parent_path()));
  const fs::path lock_file = provision_lock(cache, p.cuda);
  auto waiting = [&] {
    if (on_line) on_line("waiting for another opforge process that provisions (or prunes) CUDA " + p.cuda.str());
  };
  for (int attempt = 0; attempt < 3; ++attempt) {
    // Shared first: a toolkit already there is used by any number of builds at once.
    auto shared = OPFORGE_TRY(probe::wait_for_shared_lock(m.fs, lock_file, waiting));
    if (complete(m.fs, p.dir) && read_manifest(m.fs, p.dir, p)) {
      p.present = true;
      p.hold = shared;
      OPFORGE_CHECK(m.fs.write_file_atomic(p.dir / kLastUse, ""));
      return p;
    }
    shared.reset();
    auto lock = OPFORGE_TRY(probe::wait_for_lock(m.fs, lock_file, waiting));
    // Another build may have made it while this one waited.
    if (!complete(m.fs, p.dir)) {
      // Under the lock, a temporary folder of this version is a killed run's: it is made again.
      const fs::path tmp = p.dir.parent_path() / (std::string(kPartialPrefix) + p.cuda.str());
      OPFORGE_CHECK(m.fs.remove_all(tmp));
      OPFORGE_CHECK(m.fs.create_directories(tmp));
      p.packages.clear();
      auto made = install_into(m, p, tmp, on_line);
      if (!made) {
        (void)m.fs.remove_all(tmp);
        return opforge::unexpected(made.error());
      }
      // An incomplete folder left by hand (no manifest) is replaced.
      if (m.fs.type_of(p.dir) != probe::FileType::none) OPFORGE_CHECK(m.fs.remove_all(p.dir));
      OPFORGE_CHECK(m.fs.rename(tmp, p.dir));
      // Its size, once: listing the cache never walks it.
      (void)probe::record_size(m.fs, p.dir, probe::tree_bytes(m.fs, p.dir));
      p.fetched = true;
    }
    // Back to shared (a prune may slip in between: then the loop makes it again).
  }
  return failure("CUDA " + p.cuda.str() + " in " + p.dir.string() + " was removed three times while this build waited",
                 "is `opforge cache prune` running in a loop?");
}

std::vector<Provision> list_provisioned(const probe::FileSystem& fs, const fs::path& cache) {
  std::vector<Provision> out;
  auto names = fs.list_directory(cache::folder(cache, cache::Kind::toolkit));
  if (!names) return out;
  for (auto& n : *names) {
    if (n.starts_with(".")) continue;
    Provision p;
    p.dir = cache::folder(cache, cache::Kind::toolkit) / n;
    if (!complete(fs, p.dir) || !read_manifest(fs, p.dir, p)) continue;
    p.present = true;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace opforge::cuda
