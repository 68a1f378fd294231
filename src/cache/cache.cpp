#include "cache/cache.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cache/layout.h"
#include "compile/scratch/scratch.h"
#include "cuda/provision.h"
#include "plan/matrix.h"
#include "util/json.h"
#include "util/json_read.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace opforge::cache {

namespace {

constexpr std::int64_t kMaxAgeSeconds = 36500LL * 86400;
constexpr std::uint64_t kMaxSizeBytes = 1ULL << 50;

std::int64_t mtime(const probe::FileSystem& fs, const fs::path& p) {
  auto st = fs.stamp(p);
  return st ? st->mtime_ns : 0;
}

bool held(probe::FileSystem& fs, const fs::path& lock) {
  if (fs.type_of(lock) == probe::FileType::none && fs.type_of(lock.parent_path()) != probe::FileType::directory)
    return false;
  // A lock that cannot be taken (a read-only cache) counts as held: listing never claims it free.
  auto l = fs.try_lock(lock);
  return !l || !*l;
}

void toolkits(probe::FileSystem& fs, const fs::path& cache, std::vector<Entry>& out) {
  const fs::path dir = folder(cache, Kind::toolkit);
  auto names = fs.list_directory(dir);
  if (!names) return;
  for (auto& n : *names) {
    if (fs.type_of(dir / n) != probe::FileType::directory) continue;
    Entry e;
    e.path = dir / n;
    if (n.starts_with(cuda::kPartialPrefix)) {
      e.kind = "partial";
      e.user = "a provisioning that did not finish";
      e.lock = cuda::toolkit_lock(dir / n.substr(cuda::kPartialPrefix.size()));
      e.last_use_ns = mtime(fs, e.path);
    } else if (n.starts_with(".")) {
      continue;
    } else {
      e.kind = entry_name(Kind::toolkit);
      e.lock = cuda::toolkit_lock(e.path);
      auto text = fs.read_file(e.path / cuda::kManifest);
      auto j = text ? util::json_parse(*text) : nlohmann::json();
      e.user = "CUDA " + n;
      if (auto requirement = util::json_read::text(j, "requirement")) e.user += " (" + *requirement + ")";
      e.last_use_ns = std::max(mtime(fs, e.path / cuda::kLastUse), mtime(fs, e.path / cuda::kManifest));
    }
    out.push_back(std::move(e));
  }
}

void envs(probe::FileSystem& fs, const fs::path& cache, std::vector<Entry>& out) {
  const fs::path dir = folder(cache, Kind::env);
  auto names = fs.list_directory(dir);
  if (!names) return;
  for (auto& n : *names) {
    if (n.starts_with(".") || fs.type_of(dir / n) != probe::FileType::directory) continue;
    Entry e;
    e.kind = entry_name(Kind::env);
    e.path = dir / n;
    e.lock = plan::env_lock(e.path);
    auto text = fs.read_file(e.path / plan::kEnvMarker);
    auto j = text ? util::json_parse(*text) : nlohmann::json();
    if (auto cell = util::json_read::text(j, "cell")) {
      e.user = "matrix cell " + *cell;
      if (auto torch = util::json_read::text(j, "torch")) e.user += " (" + *torch + ")";
      e.last_use_ns = mtime(fs, e.path / plan::kEnvMarker);
    } else {
      e.kind = "partial";
      e.user = "an environment that was not finished";
      e.last_use_ns = mtime(fs, e.path);
    }
    out.push_back(std::move(e));
  }
}

void trees(probe::FileSystem& fs, const fs::path& cache, std::vector<Entry>& out) {
  const fs::path dir = folder(cache, Kind::tree);
  auto names = fs.list_directory(dir);
  if (!names) return;
  for (auto& n : *names) {
    if (fs.type_of(dir / n) != probe::FileType::directory) continue;
    Entry e;
    e.kind = entry_name(Kind::tree);
    e.path = dir / n;
    e.lock = compile::tree_lock(e.path);
    e.user =
        "a command build's scratch copy of a source tree (kept after a failure or a kill: the next build resumes it)";
    e.last_use_ns = mtime(fs, e.path);
    out.push_back(std::move(e));
  }
}

/// Each folder of `kind`'s folder (hidden ones aside) as an entry, its lock beside it, last used
/// when its last-use stamp or the folder last changed; `describe` fills its kind and words.
template <class Describe>
void entry_folders(probe::FileSystem& fs, const fs::path& cache, Kind kind, std::vector<Entry>& out,
                   Describe describe) {
  const fs::path dir = folder(cache, kind);
  auto names = fs.list_directory(dir);
  if (!names) return;
  for (auto& n : *names) {
    if (n.starts_with(".") || fs.type_of(dir / n) != probe::FileType::directory) continue;
    Entry e;
    e.path = dir / n;
    e.lock = entry_lock(e.path);
    describe(n, e);
    e.last_use_ns = std::max(mtime(fs, e.path / kLastUse), mtime(fs, e.path));
    out.push_back(std::move(e));
  }
}

/// `<cache>/git/<name>-<hash>`: a bare clone (repo.git) and one checkout per commit (trees/).
void gits(probe::FileSystem& fs, const fs::path& cache, std::vector<Entry>& out) {
  entry_folders(fs, cache, Kind::git, out, [](const std::string& n, Entry& e) {
    e.kind = entry_name(Kind::git);
    e.user = "a clone of a [source] git repository (" + n.substr(0, n.rfind('-')) + ") and its checkouts";
  });
}

/// `<cache>/sdists/<stem>-<sha>`: an unpacked [source] sdist (tree/) and a URL's download.
void sdists(probe::FileSystem& fs, const fs::path& cache, std::vector<Entry>& out) {
  entry_folders(fs, cache, Kind::sdist, out, [&](const std::string& n, Entry& e) {
    if (fs.type_of(e.path / "tree") == probe::FileType::directory) {
      e.kind = entry_name(Kind::sdist);
      e.user = "a [source] sdist (" + n.substr(0, n.rfind('-')) + "), unpacked";
    } else {
      e.kind = "partial";
      e.user = "a [source] sdist whose download or unpacking was not finished";
    }
  });
}

/// `<cache>/pch/<key>`: a precompiled torch header (compile/pch/pch.h), `done` once complete.
void pchs(probe::FileSystem& fs, const fs::path& cache, std::vector<Entry>& out) {
  entry_folders(fs, cache, Kind::pch, out, [&](const std::string&, Entry& e) {
    if (fs.type_of(e.path / "done") == probe::FileType::regular) {
      e.kind = entry_name(Kind::pch);
      e.user = "a precompiled torch/extension.h for one compiler, its flags and one torch";
    } else {
      e.kind = "partial";
      e.user = "a precompiled header that was not finished (or could not be made: failed)";
    }
  });
}

/// One lister per cache::Kind (layout.h names the folders).
using Lister = void (*)(probe::FileSystem&, const fs::path&, std::vector<Entry>&);
Lister lister(Kind k) {
  switch (k) {
    case Kind::toolkit: return toolkits;
    case Kind::env: return envs;
    case Kind::tree: return trees;
    case Kind::git: return gits;
    case Kind::sdist: return sdists;
    case Kind::pch: return pchs;
  }
  return nullptr;
}

}  // namespace

std::uint64_t size_of(const probe::FileSystem& fs, const fs::path& path) { return probe::tree_bytes(fs, path); }

std::vector<Entry> list(probe::FileSystem& fs, const fs::path& cache, Sizes sizes) {
  std::vector<Entry> out;
  for (const auto& f : kFolders) lister(f.kind)(fs, cache, out);
  for (auto& e : out) {
    e.in_use = held(fs, e.lock);
    if (auto bytes = probe::recorded_size(fs, e.path)) {
      e.bytes = *bytes;
      e.measured = true;
    } else if (sizes == Sizes::measure_missing) {
      // An entry made before sizes were kept (or a killed run's): walked once, and its size kept
      // unless a build is changing it right now.
      e.bytes = size_of(fs, e.path);
      e.measured = true;
      if (!e.in_use && e.kind != "partial") (void)probe::record_size(fs, e.path, e.bytes);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.last_use_ns < b.last_use_ns; });
  return out;
}

Totals totals(const std::vector<Entry>& entries) {
  Totals t;
  for (auto& e : entries) {
    ++t.entries;
    if (e.measured) t.bytes += e.bytes;
    else ++t.unmeasured;
  }
  return t;
}

Result<PruneReport> prune(probe::FileSystem& fs, const fs::path& cache, const PruneOptions& opts) {
  PruneReport report;
  auto entries = list(fs, cache, Sizes::measure_missing);
  std::uint64_t total = 0;
  for (auto& e : entries) total += e.bytes;
  report.bytes_before = total;
  auto remove = [&](const Entry& e) -> Result<bool> {
    auto lock = OPFORGE_TRY(fs.try_lock(e.lock));
    if (!lock) {
      report.kept_in_use.push_back(e);
      return false;
    }
    OPFORGE_CHECK(fs.remove_all(e.path));
    (void)fs.remove(probe::size_file(e.path));
    total -= e.bytes;
    report.removed.push_back(e);
    return true;
  };
  std::vector<bool> gone(entries.size(), false);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    const bool old =
        opts.older_than &&
        opts.now_ns - e.last_use_ns > std::chrono::duration_cast<std::chrono::nanoseconds>(*opts.older_than).count();
    if (e.kind == "partial" || old) gone[i] = OPFORGE_TRY(remove(e));
  }
  if (opts.max_bytes)
    for (std::size_t i = 0; i < entries.size() && total > *opts.max_bytes; ++i) {
      if (gone[i] || std::any_of(report.kept_in_use.begin(), report.kept_in_use.end(),
                                 [&](auto& k) { return k.path == entries[i].path; }))
        continue;
      gone[i] = OPFORGE_TRY(remove(entries[i]));
    }
  report.bytes_after = total;
  return report;
}

Result<std::chrono::seconds> parse_age(std::string_view text) {
  std::string t(strings::trim(text));
  auto bad = [&] {
    return bad_input("--older-than '" + strings::cut(t) + "' is not an age",
                     "write a number and a unit: 30d, 12h, 90m, 45s, 2w");
  };
  if (t.size() < 2) return bad();
  std::int64_t unit = 0;
  switch (t.back()) {
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    case 'w': unit = 7 * 86400; break;
    default: return bad();
  }
  auto n = numbers::parse_int<std::int64_t>(std::string_view(t).substr(0, t.size() - 1));
  if (!n && n.error() == numbers::IntError::not_integer) return bad();
  if (n && *n < 0) return bad();
  // Ages are compared in nanoseconds (int64: 292 years): 150000d overflowed there, turned negative
  // and removed everything. A hundred years is more than any cache entry can be old.
  if (!n || *n > kMaxAgeSeconds / unit)
    return bad_input("--older-than '" + strings::cut(t) + "' is out of range",
                     "ages go from 0s to 36500d (100 years); to remove everything, use --max-size 0");
  return std::chrono::seconds(*n * unit);
}

Result<std::uint64_t> parse_size(std::string_view text) {
  std::string t(strings::trim(text));
  auto bad = [&] {
    return bad_input("--max-size '" + strings::cut(t) + "' is not a size",
                     "write bytes or a number with K, M, G or T: 20G, 500M");
  };
  if (t.empty()) return bad();
  double mult = 1;
  switch (std::toupper(static_cast<unsigned char>(t.back()))) {
    case 'K': mult = 1024.0; break;
    case 'M': mult = 1024.0 * 1024; break;
    case 'G': mult = 1024.0 * 1024 * 1024; break;
    case 'T': mult = 1024.0 * 1024 * 1024 * 1024; break;
    default: break;
  }
  if (mult != 1) t.pop_back();
  if (t.empty() || t.size() > 15 || t.find_first_not_of("0123456789.") != std::string::npos ||
      std::count(t.begin(), t.end(), '.') > 1 || t.front() == '.' || t.back() == '.')
    return bad();
  // A double past 2^64 converts to an integer undefined; sizes stop well before.
  const double bytes = std::stod(t) * mult;
  if (bytes > static_cast<double>(kMaxSizeBytes))
    return bad_input("--max-size '" + strings::cut(std::string(strings::trim(text))) + "' is out of range",
                     "sizes go from 0 to 1024T (1 PiB)");
  return static_cast<std::uint64_t>(std::llround(bytes));
}

}  // namespace opforge::cache
