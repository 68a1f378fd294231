#include "devices/resolve.h"

#include <algorithm>
#include <set>

#include "settings/settings.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace opforge::devices {

namespace {

using CUresult = int;
using CUdevice = int;
using cuInit_t = CUresult (*)(unsigned);
using cuDeviceGetCount_t = CUresult (*)(int*);
using cuDeviceGet_t = CUresult (*)(CUdevice*, int);
using cuDeviceGetAttribute_t = CUresult (*)(int*, int, CUdevice);
using cuDeviceGetName_t = CUresult (*)(char*, int, CUdevice);

constexpr int kAttrMajor = 75;
constexpr int kAttrMinor = 76;
constexpr CUresult kNoDevice = 100;

/// nullopt: the driver could not be used at all (fall back); a vector (maybe empty): its answer.
std::optional<std::vector<Gpu>> read_driver(probe::Machine m, std::string& why) {
  // Never the bare libcuda.so: that is the toolkit's stub whose cuInit returns 34.
  void* h = m.dl.open("libcuda.so.1");
  if (!h) {
    why = "libcuda.so.1 cannot be loaded (no NVIDIA driver)";
    return std::nullopt;
  }
  auto init = reinterpret_cast<cuInit_t>(m.dl.symbol(h, "cuInit"));
  auto count = reinterpret_cast<cuDeviceGetCount_t>(m.dl.symbol(h, "cuDeviceGetCount"));
  auto get = reinterpret_cast<cuDeviceGet_t>(m.dl.symbol(h, "cuDeviceGet"));
  auto attr = reinterpret_cast<cuDeviceGetAttribute_t>(m.dl.symbol(h, "cuDeviceGetAttribute"));
  auto name = reinterpret_cast<cuDeviceGetName_t>(m.dl.symbol(h, "cuDeviceGetName"));
  if (!init || !count || !get || !attr) {
    m.dl.close(h);
    why = "libcuda.so.1 lacks the driver API entry points";
    return std::nullopt;
  }
  std::vector<Gpu> out;
  CUresult rc = init(0);
  if (rc == kNoDevice) {
    m.dl.close(h);
    why = "driver API: no CUDA device";
    return out;
  }
  if (rc != 0) {
    m.dl.close(h);
    why = "driver API: cuInit failed with error " + std::to_string(rc);
    return std::nullopt;
  }
  int n = 0;
  if (count(&n) != 0) {
    m.dl.close(h);
    why = "driver API: cuDeviceGetCount failed";
    return std::nullopt;
  }
  for (int i = 0; i < n; ++i) {
    CUdevice d = 0;
    if (get(&d, i) != 0) continue;
    Gpu g;
    g.index = i;
    attr(&g.major, kAttrMajor, d);
    attr(&g.minor, kAttrMinor, d);
    if (name) {
      char buf[256] = {};
      if (name(buf, sizeof buf, d) == 0) g.name = buf;
    }
    out.push_back(g);
  }
  m.dl.close(h);
  return out;
}

// nvidia-smi ignores CUDA_VISIBLE_DEVICES, so apply it here: indices or GPU-<uuid> prefixes.
std::vector<Gpu> apply_visible(const std::vector<Gpu>& all, const std::optional<std::string>& visible) {
  if (!visible) return all;
  std::vector<Gpu> out;
  for (auto& raw : strings::split(*visible, ',')) {
    auto e = std::string(strings::trim(raw));
    if (e.empty()) break;
    bool numeric = std::all_of(e.begin(), e.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    const Gpu* hit = nullptr;
    for (auto& g : all) {
      // A number too large for an index matches no GPU, like any other unknown index.
      if (numeric ? numbers::parse_int<int>(e) == g.index : (!g.uuid.empty() && g.uuid.starts_with(e))) hit = &g;
    }
    // Like the driver: an invalid entry hides it and everything after it.
    if (!hit) break;
    out.push_back(*hit);
  }
  return out;
}

}  // namespace

std::string driver_cuda_version(probe::Machine m) {
  using cuDriverGetVersion_t = CUresult (*)(int*);
  void* h = m.dl.open("libcuda.so.1");
  if (!h) return "";
  auto get = reinterpret_cast<cuDriverGetVersion_t>(m.dl.symbol(h, "cuDriverGetVersion"));
  int v = 0;
  // Needs no cuInit: it answers on a node whose GPUs are busy or hidden too.
  const bool ok = get && get(&v) == 0 && v > 0 && v < 100000;
  m.dl.close(h);
  return ok ? std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10) : "";
}

std::vector<Gpu> read_gpus(probe::Machine m, std::string& reader) {
  std::string why;
  if (auto gpus = read_driver(m, why)) {
    reader = gpus->empty() ? "driver API (" + why + ")" : "driver API";
    return *gpus;
  }
  auto r = m.proc.run(
      probe::Command{.argv = {"nvidia-smi", "--query-gpu=index,name,compute_cap,uuid", "--format=csv,noheader"},
                     .timeout = std::chrono::milliseconds(10000)});
  if (!r || !r->ok()) {
    reader = "none (" + why + "; nvidia-smi " + (r ? "failed" : "not found") + ")";
    return {};
  }
  reader = "nvidia-smi";
  return apply_visible(parse_nvidia_smi(r->out), settings::visible_devices(m.env));
}

std::vector<target::Arch> accepted_by(probe::Machine m, const cuda::Toolkit& tk) {
  std::vector<target::Arch> plain;
  if (!tk.nvcc.empty()) {
    auto r = m.proc.run(
        probe::Command{.argv = {tk.nvcc.string(), "--list-gpu-arch"}, .timeout = std::chrono::milliseconds(20000)});
    if (r && r->ok()) plain = parse_list_gpu_arch(r->out);
  }
  if (plain.empty()) plain = table_accepted(tk.version);
  std::vector<target::Arch> out;
  for (auto a : plain) {
    out.push_back(a);
    // 'a' variants exist from 9.0 on, 'f' from 10.0 on with CUDA 12.9+.
    if (a.major >= 9) out.push_back(target::Arch{a.major, a.minor, 'a'});
    if (a.major >= 10 && tk.version >= Version{12, 9}) out.push_back(target::Arch{a.major, a.minor, 'f'});
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

/// Which architectures to build for, before nvcc has its say: the list the plan hands over (the
/// recipe's, or TORCH_CUDA_ARCH_LIST read by settings::arch_list, or the node reports'), else the
/// GPUs of this machine, else the recipe's fallback list. Fills d.source, d.gpu_reader, d.gpus
/// and d.notes.
Result<std::vector<target::Arch>> wanted_arches(probe::Machine m, const std::string& recipe_list,
                                                const std::string& fallback, ArchDecision& d) {
  if (!recipe_list.empty() && recipe_list != "auto") {
    d.source = "recipe [arch] list";
    d.gpu_reader = "not read ([arch] list is explicit)";
    return target::check_arch_list(recipe_list);
  }
  d.gpus = read_gpus(m, d.gpu_reader);
  if (d.gpus.empty()) {
    d.source = "fallback";
    d.notes.push_back("no GPU found (" + d.gpu_reader + "): using the recipe's fallback list " + fallback);
    return target::parse_arch_list(fallback);
  }
  std::set<std::pair<int, int>> kinds;
  for (auto& g : d.gpus) kinds.insert({g.major, g.minor});
  std::vector<target::Arch> wanted;
  for (auto [M, mi] : kinds) wanted.push_back(target::Arch{M, mi});
  wanted.back().ptx = true;
  d.source = "GPUs";
  if (kinds.size() > 1) d.notes.push_back("several GPU generations present: building for each");
  return wanted;
}

/// Keeps what nvcc accepts (one entry per target, a +PTX duplicate wins) and says why the rest went.
void keep_accepted(const std::vector<target::Arch>& wanted, const std::vector<target::Arch>& accepted,
                   const Version& cuda, ArchDecision& d) {
  for (auto& a : wanted) {
    target::Arch plain = a;
    plain.ptx = false;
    if (std::find(accepted.begin(), accepted.end(), plain) == accepted.end()) {
      d.dropped.push_back({a.str(), "nvcc " + cuda.str() + " does not accept sm_" + a.sm()});
      continue;
    }
    auto same = std::find_if(d.arches.begin(), d.arches.end(), [&](const target::Arch& x) {
      return x.major == a.major && x.minor == a.minor && x.suffix == a.suffix;
    });
    if (same != d.arches.end()) same->ptx = same->ptx || a.ptx;
    else d.arches.push_back(a);
  }
  bool lost_ptx = std::any_of(wanted.begin(), wanted.end(), [](auto& a) { return a.ptx; }) &&
                  std::none_of(d.arches.begin(), d.arches.end(), [](auto& a) { return a.ptx; });
  if (lost_ptx && !d.arches.empty()) {
    // Keep forward compatibility with newer GPUs when the +PTX entry itself was dropped.
    d.arches.back().ptx = true;
    d.notes.push_back("+PTX moved to " + d.arches.back().str() + " because the entry carrying it was dropped");
  }
}

}  // namespace

Result<ArchDecision> resolve(probe::Machine m, const cuda::Toolkit& tk, const std::string& recipe_list,
                             const std::string& fallback) {
  ArchDecision d;
  std::vector<target::Arch> wanted = OPFORGE_TRY(wanted_arches(m, recipe_list, fallback, d));
  std::sort(wanted.begin(), wanted.end());
  keep_accepted(wanted, accepted_by(m, tk), tk.version, d);
  if (d.arches.empty()) {
    std::string what;
    for (auto& [e, why] : d.dropped) what += "\n  " + e + ": " + why;
    return unsatisfied(
        "no requested GPU architecture is accepted by nvcc " + tk.version.str() + " (from " + d.source + "):" + what,
        "choose architectures the toolkit supports, or another CUDA version");
  }
  return d;
}

}  // namespace opforge::devices
