#pragma once
/// Source trees: what commit a local tree is at, and fetching a pinned git revision into a cache.
/// This folder is the only place that includes git2.h (libgit2 1.5); the rest of opforge sees the
/// data below. libgit2 reads and writes repositories itself (that is the one exemption from
/// "only probe/ touches the machine"); every other file operation here goes through
/// probe::FileSystem. Its tests run on real repositories made in temporary folders.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "probe/machine.h"
#include "util/error.h"

namespace opforge::source {

namespace fs = std::filesystem;

struct Info {
  std::string commit;        ///< full 40-hex commit id
  std::string short_commit;  ///< exactly the first 7 hex digits (recipe `{commit}`)
  /// Modified, staged, deleted, or untracked-but-not-ignored files. Untracked files count: a stray
  /// file in the tree can be picked up by a build (globs, setup.py find_packages), so a tree with
  /// one is not what the commit says.
  bool dirty = false;
  std::optional<std::int64_t> commit_time;  ///< committer time, seconds since 1970 (SOURCE_DATE_EPOCH)
  fs::path root;                            ///< the work tree's top folder (fetch: the checked-out folder)
  /// How the commit was found: "HEAD" (inspect), "tag", "branch" or "commit" (fetch).
  std::string resolved_from;
  /// fetch only: true when the cache already held a clone (no new clone was made).
  bool reused_clone = false;
};

/// The git state of a local source folder. `path` may be the top of a work tree or a folder inside
/// one (then only changes under `path` make it dirty). nullopt when `path` is not inside a git work
/// tree or the repository has no commit yet; an error only for a broken repository. Untracked files
/// under `own_outputs` (absolute folders: opforge's build, dist and cache folders) do not count.
Result<std::optional<Info>> inspect(const probe::FileSystem& files, const fs::path& path,
                                    const std::vector<fs::path>& own_outputs = {});

/// Makes revision `rev` (tag, branch or commit id, full or abbreviated) of the repository at `url`
/// (https://, ssh://, git@host:path, file://, or a local path) available read-only and returns its
/// commit, with `root` = a checkout of exactly that commit.
///
/// Cache layout, under `cache_dir`: `<name>-<hash of url>/repo.git` is a bare clone, reused by every
/// later fetch of the same url; `<name>-<hash>/trees/<commit>/` is one checkout per commit, made
/// once (in a temporary folder renamed into place, so never half-written) and never modified. The
/// clone is fetched again only when `rev` is missing from it or is a branch (branches move).
/// Errors: bad_input for an unusable url or a rev that does not exist (the message lists some of the
/// tags and branches that do); failed for I/O.
Result<Info> fetch(probe::FileSystem& files, const std::string& url, const std::string& rev, const fs::path& cache_dir);

/// Release mode (`--release`, `[build] release = true`): refuses a dirty tree, a tree with no commit,
/// and a moving rev (a branch) unless `expected_commit` (from a build record; full or >= 7 hex
/// digits) names the commit it resolved to. A given `expected_commit` must match in every case.
Status check_release(const Info& info, const std::string& rev, bool rev_is_branch,
                     const std::optional<std::string>& expected_commit);

/// The cache folder name for `url` (exposed for tests and `opforge` messages).
std::string cache_key(const std::string& url);

}  // namespace opforge::source
