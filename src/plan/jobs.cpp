#include "plan/jobs.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "util/numbers.h"
#include "util/strings.h"

namespace opforge::plan {

namespace {

std::optional<std::uint64_t> meminfo_available(const probe::FileSystem& fs) {
  auto text = fs.read_file("/proc/meminfo");
  if (!text) return std::nullopt;
  for (auto line : strings::split(*text, '\n')) {
    if (!line.starts_with("MemAvailable:")) continue;
    std::string value(strings::trim(line.substr(13)));
    if (value.ends_with("kB")) value = std::string(strings::trim(value.substr(0, value.size() - 2)));
    if (auto v = numbers::parse_int<std::uint64_t>(value)) return *v;
  }
  return std::nullopt;
}

/// What the cgroup v2 limit of this process leaves, in KiB; nullopt without a limit.
std::optional<std::uint64_t> cgroup_available(const probe::FileSystem& fs) {
  auto self = fs.read_file("/proc/self/cgroup");
  if (!self) return std::nullopt;
  for (auto line : strings::split(*self, '\n')) {
    if (!line.starts_with("0::")) continue;
    const fs::path dir =
        fs::path("/sys/fs/cgroup") / fs::path(std::string(strings::trim(line.substr(3)))).relative_path();
    auto max = fs.read_file(dir / "memory.max");
    auto current = fs.read_file(dir / "memory.current");
    if (!max || !current) return std::nullopt;
    auto limit = numbers::parse_int<std::uint64_t>(strings::trim(*max));  // "max": no limit
    auto used = numbers::parse_int<std::uint64_t>(strings::trim(*current));
    if (!limit || !used) return std::nullopt;
    return (*limit > *used ? *limit - *used : 0) / 1024;
  }
  return std::nullopt;
}

}  // namespace

std::string gib(std::uint64_t kib) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(kib) / (1024.0 * 1024.0));
  return buf;
}

std::optional<std::uint64_t> available_memory_kib(const probe::FileSystem& fs) {
  auto mem = meminfo_available(fs);
  auto cg = cgroup_available(fs);
  if (mem && cg) return std::min(*mem, *cg);
  return mem ? mem : cg;
}

std::map<std::string, std::uint64_t> load_compile_peaks(const probe::FileSystem& fs, const fs::path& cache_dir) {
  std::map<std::string, std::uint64_t> out;
  if (cache_dir.empty()) return out;
  auto text = fs.read_file(cache_dir / "compile-peaks.json");
  if (!text) return out;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) return out;
  for (auto& [op, v] : j.items())
    if (v.is_number_unsigned()) out[op] = v.get<std::uint64_t>();
  return out;
}

void store_compile_peaks(probe::FileSystem& fs, const fs::path& cache_dir,
                         const std::map<std::string, std::uint64_t>& peaks) {
  if (cache_dir.empty() || peaks.empty()) return;
  auto all = load_compile_peaks(fs, cache_dir);
  for (auto& [op, kib] : peaks) all[op] = std::max(all[op], kib);
  nlohmann::json j = nlohmann::json::object();
  for (auto& [op, kib] : all) j[op] = kib;
  (void)fs.create_directories(cache_dir);
  (void)fs.write_file_atomic(cache_dir / "compile-peaks.json", j.dump(1) + "\n");
}

MemoryJobs memory_aware_jobs(unsigned cores, std::optional<std::uint64_t> available_kib,
                             const std::vector<ops::Decision>& ops, const std::map<std::string, std::uint64_t>& peaks) {
  cores = std::max(1u, cores);
  MemoryJobs out{cores, std::to_string(cores) + (cores == 1 ? " core" : " cores")};
  if (!available_kib) {
    out.why += "; available memory unknown";
    return out;
  }
  std::uint64_t peak = 0;
  std::string what;
  bool recorded = false, nvcc = false;
  for (auto& d : ops) {
    if (!d.build) continue;
    auto it = peaks.find(d.manifest.name);
    const bool cuda = d.manifest.kind == ops::Kind::cuda;
    const std::uint64_t p = it != peaks.end() ? it->second : cuda ? kDefaultNvccPeakKib : kDefaultCxxPeakKib;
    if (p > peak) {
      peak = p;
      recorded = it != peaks.end();
      nvcc = cuda;
    }
  }
  if (peak == 0) return out;  // nothing is compiled
  what = recorded ? " per compile (recorded)" : nvcc ? " per nvcc compile" : " per C++ compile";
  const std::uint64_t fit = std::max<std::uint64_t>(1, *available_kib / peak);
  out.jobs = static_cast<unsigned>(std::min<std::uint64_t>(cores, fit));
  out.why += "; " + gib(*available_kib) + " available / " + gib(peak) + what;
  return out;
}

}  // namespace opforge::plan
