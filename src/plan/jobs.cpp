#include "plan/jobs.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "util/json.h"
#include "util/json_read.h"
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

std::optional<std::uint64_t> read_number(const probe::FileSystem& fs, const fs::path& file) {
  auto text = fs.read_file(file);
  if (!text) return std::nullopt;
  auto v = numbers::parse_int<std::uint64_t>(strings::trim(*text));
  return v ? std::optional(*v) : std::nullopt;
}

/// A `key value` line of a cgroup's memory.stat; nullopt when absent.
std::optional<std::uint64_t> stat_value(const probe::FileSystem& fs, const fs::path& dir, std::string_view key) {
  auto text = fs.read_file(dir / "memory.stat");
  if (!text) return std::nullopt;
  for (auto line : strings::split(*text, '\n'))
    if (line.starts_with(key) && line.size() > key.size() && line[key.size()] == ' ') {
      auto v = numbers::parse_int<std::uint64_t>(strings::trim(line.substr(key.size() + 1)));
      return v ? std::optional(*v) : std::nullopt;
    }
  return std::nullopt;
}

/// limit - (usage - inactive file pages), in KiB: the kernel reclaims inactive page cache before it
/// kills anything, so a cgroup full of cache still has room for a compile.
std::uint64_t left_under(std::uint64_t limit, std::uint64_t usage, std::optional<std::uint64_t> inactive_file) {
  const std::uint64_t cache = std::min(usage, inactive_file.value_or(0));
  usage -= cache;
  return (limit > usage ? limit - usage : 0) / 1024;
}

/// The cgroup folder of `relative` under `mount`; the mount itself when the path is not there (a
/// container without a cgroup namespace sees the host's path but has its own cgroup mounted).
fs::path cgroup_dir(const probe::FileSystem& fs, const fs::path& mount, std::string_view relative) {
  const fs::path dir = mount / fs::path(std::string(strings::trim(relative))).relative_path();
  return fs.type_of(dir) == probe::FileType::directory ? dir : mount;
}

/// v1 reports "no limit" as a huge page-rounded number (2^63 - 4096 on x86_64).
constexpr std::uint64_t kNoLimit = 1ull << 60;

}  // namespace

std::optional<AvailableMemory> available_memory(const probe::FileSystem& fs) {
  auto mem = meminfo_available(fs);
  std::optional<AvailableMemory> cgroup;
  if (auto self = fs.read_file("/proc/self/cgroup")) {
    for (auto line : strings::split(*self, '\n')) {
      if (line.starts_with("0::")) {  // cgroup v2: memory.max is "max" without a limit
        const fs::path dir = cgroup_dir(fs, "/sys/fs/cgroup", line.substr(3));
        auto limit = read_number(fs, dir / "memory.max");
        auto usage = read_number(fs, dir / "memory.current");
        if (limit && usage)
          cgroup =
              AvailableMemory{left_under(*limit, *usage, stat_value(fs, dir, "inactive_file")), "cgroup v2 memory.max"};
        continue;
      }
      // cgroup v1: "4:memory:/path" (the controllers are a comma-separated list).
      auto parts = strings::split(line, ':');
      if (parts.size() < 3) continue;
      auto controllers = strings::split(parts[1], ',');
      if (std::find(controllers.begin(), controllers.end(), "memory") == controllers.end()) continue;
      const auto rest = line.substr(parts[0].size() + parts[1].size() + 2);
      const fs::path dir = cgroup_dir(fs, "/sys/fs/cgroup/memory", rest);
      // hierarchical_memory_limit: the smallest limit of the cgroup and its parents.
      auto limit = stat_value(fs, dir, "hierarchical_memory_limit");
      if (!limit) limit = read_number(fs, dir / "memory.limit_in_bytes");
      auto usage = read_number(fs, dir / "memory.usage_in_bytes");
      if (limit && usage && *limit < kNoLimit && !cgroup)
        cgroup = AvailableMemory{left_under(*limit, *usage, stat_value(fs, dir, "total_inactive_file")),
                                 "cgroup v1 memory.limit_in_bytes"};
    }
  }
  if (cgroup && (!mem || cgroup->kib < *mem)) return cgroup;
  if (mem) return AvailableMemory{*mem, "MemAvailable"};
  return std::nullopt;
}

std::string gib(std::uint64_t kib) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(kib) / (1024.0 * 1024.0));
  return buf;
}

std::optional<std::uint64_t> available_memory_kib(const probe::FileSystem& fs) {
  auto a = available_memory(fs);
  return a ? std::optional(a->kib) : std::nullopt;
}

std::map<std::string, std::uint64_t> load_compile_peaks(const probe::FileSystem& fs, const fs::path& cache_dir) {
  std::map<std::string, std::uint64_t> out;
  if (cache_dir.empty()) return out;
  const fs::path file = cache_dir / "compile-peaks.json";
  // Only a hint for the job count: anything but a JSON object is said once and written afresh.
  auto text = probe::read_kept_file(fs, file);
  if (!text) return out;
  auto j = util::json_parse_checked(*text);
  if (!j || !j->is_object()) {
    fs.report_ignored(file, file.string() + ": " + (j ? "not a JSON object" : j.error().message));
    return out;
  }
  for (auto& [op, v] : j->items())
    if (auto kib = util::json_read::count(v)) out[op] = *kib;
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
  (void)fs.write_file_atomic(cache_dir / "compile-peaks.json", util::json_dump(j, 1) + "\n");
}

MemoryJobs memory_aware_jobs(unsigned cores, std::optional<std::uint64_t> available_kib,
                             const std::vector<ops::Decision>& ops, const std::map<std::string, std::uint64_t>& peaks,
                             std::string_view limited_by, std::string_view steps_key, std::uint64_t reserve_kib) {
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
    if (!d.builds()) continue;
    auto it = peaks.find(d.manifest.name);
    const bool cuda = d.manifest.kind == ops::Kind::cuda;
    const std::uint64_t p = it != peaks.end() ? it->second : cuda ? kDefaultNvccPeakKib : kDefaultCxxPeakKib;
    if (p > peak) {
      peak = p;
      recorded = it != peaks.end();
      nvcc = cuda;
    }
  }
  if (peak == 0 && !steps_key.empty())
    if (auto it = peaks.find(std::string(steps_key)); it != peaks.end() && it->second > 0) {
      peak = it->second;
      recorded = true;
    }
  if (peak == 0) return out;  // nothing is compiled, or nothing known of a project's own steps
  what = recorded ? " per compile (recorded)" : nvcc ? " per nvcc compile" : " per C++ compile";
  const std::uint64_t usable = *available_kib > reserve_kib ? *available_kib - reserve_kib : 0;
  const std::uint64_t fit = std::max<std::uint64_t>(1, usable / peak);
  out.jobs = static_cast<unsigned>(std::min<std::uint64_t>(cores, fit));
  out.why += "; " + gib(*available_kib) + " available" +
             (limited_by.empty() ? std::string() : " (" + std::string(limited_by) + ")") +
             (reserve_kib ? " less " + gib(reserve_kib) + " for making the precompiled torch header" : std::string()) +
             " / " + gib(peak) + what;
  return out;
}

std::string steps_peak_key(std::string_view package) { return "steps:" + std::string(package); }

}  // namespace opforge::plan
