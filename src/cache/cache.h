#pragma once
/// What opforge's cache folder holds that grows: provisioned toolkits (<cache>/toolkits, ~300 MB
/// each), matrix environments (<cache>/envs, several GB each) and the scratch trees command builds
/// leave (<cache>/trees); `opforge cache` lists them, `opforge cache prune` removes the least
/// recently used, never one whose lock another process holds.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "probe/machine.h"
#include "util/error.h"

namespace opforge::cache {

namespace fs = std::filesystem;

struct Entry {
  std::string kind;  ///< "toolkit", "env", "tree", "partial" (a killed run's temporary)
  fs::path path;
  std::uint64_t bytes = 0;       ///< files and symlinks under it (symlinks not followed)
  bool measured = false;         ///< bytes is known (its size file, or measured by this listing)
  std::int64_t last_use_ns = 0;  ///< when a build last used it (ns since the epoch)
  std::string user;              ///< what uses it: "CUDA 13.2 (cuda-toolkit[...]==13.2.2)", "torch2.15.0-py3.11 ..."
  fs::path lock;                 ///< the lock file a build holds while it uses the entry
  bool in_use = false;           ///< the lock is held by another process right now
};

/// How list() learns each entry's size. Each entry's owner writes its size file when it makes
/// the entry (probe::size_file); an entry without one (made by an older opforge) is walked only
/// by measure_missing, which then keeps its size.
enum class Sizes {
  recorded,         ///< size files only: fast whatever the cache holds (doctor)
  measure_missing,  ///< walk an entry without a size file, once (`opforge cache`, prune)
};

/// Every entry, least recently used first. Takes (and at once drops) each entry's lock to tell
/// whether it is in use.
std::vector<Entry> list(probe::FileSystem& fs, const fs::path& cache, Sizes sizes);

/// What doctor and `opforge cache` say of the cache as a whole (the same sum).
struct Totals {
  std::size_t entries = 0;
  std::uint64_t bytes = 0;     ///< of the measured entries
  std::size_t unmeasured = 0;  ///< entries whose size is not known yet (Sizes::recorded)
};
Totals totals(const std::vector<Entry>& entries);

/// Bytes under `path` (files and symlinks; symlinks not followed).
std::uint64_t size_of(const probe::FileSystem& fs, const fs::path& path);

struct PruneOptions {
  std::optional<std::chrono::seconds> older_than;  ///< remove what was last used longer ago
  std::optional<std::uint64_t> max_bytes;          ///< then remove LRU first until the entries fit
  std::int64_t now_ns = 0;                         ///< the present (ns since the epoch)
};

struct PruneReport {
  std::vector<Entry> removed;
  std::vector<Entry> kept_in_use;  ///< would have gone, but a build holds them
  std::uint64_t bytes_before = 0, bytes_after = 0;
};

/// Removes entries per `opts`, least recently used first, each under its own lock taken
/// exclusively (an entry whose lock is held is kept and reported). With neither limit, nothing
/// but killed runs' temporaries ("partial") goes.
Result<PruneReport> prune(probe::FileSystem& fs, const fs::path& cache, const PruneOptions& opts);

/// "30d", "12h", "90m", "45s", "2w" → seconds, at most 36500d; bad_input otherwise.
Result<std::chrono::seconds> parse_age(std::string_view text);
/// "20G", "500M", "1T", "4096", "1.5G" (powers of 1024) → bytes, at most 1024T; bad_input otherwise.
Result<std::uint64_t> parse_size(std::string_view text);

}  // namespace opforge::cache
