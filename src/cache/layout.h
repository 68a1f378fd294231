#pragma once
/// The cache folder's layout, named once: each subfolder that grows (what `opforge cache` lists and
/// `prune` removes), the lock a build holds on an entry while it uses it, and the file that records
/// an entry's last use. The stages that make entries (cuda/provision, plan/matrix, compile/scratch/scratch,
/// plan/source_stage) and cache/ itself all take the names from here. Header-only and dependent on
/// nothing, so that any stage may include it.
#include <filesystem>
#include <string_view>

namespace opforge::cache {

enum class Kind { toolkit, env, tree, git, sdist, pch };

struct Folder {
  Kind kind;
  std::string_view dir;    ///< the subfolder of the cache folder
  std::string_view entry;  ///< what `opforge cache` calls one entry of it
  std::string_view holds;  ///< for the docs and `opforge cache --help`
};

/// Every subfolder, in the order `opforge cache` lists them.
inline constexpr Folder kFolders[] = {
    {Kind::toolkit, "toolkits", "toolkit", "CUDA toolkits provisioned from PyPI ([cuda] provision = \"pypi\")"},
    {Kind::env, "envs", "env", "the Python environments of [matrix] cells"},
    {Kind::tree, "trees", "tree",
     "command builds' scratch copies of a source tree (kept after a failure or a kill, for the next build to resume)"},
    {Kind::git, "git", "git", "bare clones of [source] git repositories, with a checkout per commit"},
    {Kind::sdist, "sdists", "sdist",
     "[source] sdist archives unpacked (a URL's download kept beside), one per archive and sha256"},
    {Kind::pch, "pch", "pch",
     "precompiled torch headers of command builds' host compiles, one per compiler, flags and torch ([build] pch)"},
};

inline constexpr std::string_view folder_name(Kind k) {
  for (const auto& f : kFolders)
    if (f.kind == k) return f.dir;
  return "";
}

/// What `opforge cache` calls an entry of kind `k` ("toolkit", "env", "tree", "git", "sdist", "pch").
inline constexpr std::string_view entry_name(Kind k) {
  for (const auto& f : kFolders)
    if (f.kind == k) return f.entry;
  return "";
}

/// `<cache>/<subfolder>` of entries of kind `k`.
inline std::filesystem::path folder(const std::filesystem::path& cache, Kind k) {
  return cache / std::string(folder_name(k));
}

/// The lock of one entry, beside it: `.<name>.lock`. A build holds it shared while it uses the
/// entry; the maker and `prune` take it exclusively.
inline std::filesystem::path entry_lock(const std::filesystem::path& entry) {
  return entry.parent_path() / ("." + entry.filename().string() + ".lock");
}

/// The file inside an entry whose time is the entry's last use.
inline constexpr std::string_view kLastUse = ".opforge-last-use";

}  // namespace opforge::cache
