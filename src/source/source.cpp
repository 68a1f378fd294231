#include "source/source.h"

#include <git2.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>

#include <unistd.h>
#include <cctype>

#include "util/hash.h"

namespace opforge::source {

namespace {

void init_libgit2() {
  // Never shut down: other threads or later calls may still use libgit2.
  static std::once_flag once;
  std::call_once(once, [] { git_libgit2_init(); });
}

std::string last_git_error() {
  const git_error* e = git_error_last();
  return e && e->message ? std::string(e->message) : std::string("unknown libgit2 error");
}

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const {
    if (p) Free(p);
  }
};
using Repo = std::unique_ptr<git_repository, Deleter<git_repository, git_repository_free>>;
using Object = std::unique_ptr<git_object, Deleter<git_object, git_object_free>>;
using Commit = std::unique_ptr<git_commit, Deleter<git_commit, git_commit_free>>;
using Remote = std::unique_ptr<git_remote, Deleter<git_remote, git_remote_free>>;
using StatusList = std::unique_ptr<git_status_list, Deleter<git_status_list, git_status_list_free>>;
using Reference = std::unique_ptr<git_reference, Deleter<git_reference, git_reference_free>>;

std::string oid_hex(const git_oid* oid) {
  char buf[GIT_OID_HEXSZ + 1] = {};
  git_oid_tostr(buf, sizeof buf, oid);
  return buf;
}

Info info_from_commit(const git_commit* commit) {
  Info info;
  info.commit = oid_hex(git_commit_id(commit));
  info.short_commit = info.commit.substr(0, 7);
  info.commit_time = static_cast<std::int64_t>(git_commit_time(commit));
  return info;
}

/// Peels `name` to a commit; nullptr when it does not name one.
Commit peel_commit(git_repository* repo, const std::string& spec) {
  git_object* obj = nullptr;
  if (git_revparse_single(&obj, repo, spec.c_str()) != 0) return nullptr;
  Object owned(obj);
  git_object* peeled = nullptr;
  if (git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT) != 0) return nullptr;
  return Commit(reinterpret_cast<git_commit*>(peeled));
}

bool is_hex(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  });
}

struct Resolved {
  Commit commit;
  std::string kind;  // tag | branch | commit
};

/// Resolves `rev` in a bare clone: tag first (a release name), then branch, then commit id.
std::optional<Resolved> resolve(git_repository* repo, const std::string& rev) {
  if (rev.empty()) return std::nullopt;
  if (auto c = peel_commit(repo, "refs/tags/" + rev)) return Resolved{std::move(c), "tag"};
  if (auto c = peel_commit(repo, "refs/heads/" + rev)) return Resolved{std::move(c), "branch"};
  if (is_hex(rev) && rev.size() >= 4) {
    if (auto c = peel_commit(repo, rev)) return Resolved{std::move(c), "commit"};
  }
  return std::nullopt;
}

std::vector<std::string> ref_names(git_repository* repo, const char* glob, std::size_t prefix_len) {
  std::vector<std::string> names;
  git_reference_iterator* it = nullptr;
  if (git_reference_iterator_glob_new(&it, repo, glob) != 0) return names;
  const char* name = nullptr;
  while (git_reference_next_name(&name, it) == 0) names.emplace_back(std::string(name).substr(prefix_len));
  git_reference_iterator_free(it);
  std::sort(names.begin(), names.end());
  return names;
}

std::string some(const std::vector<std::string>& names, std::size_t max = 8) {
  if (names.empty()) return "none";
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < max; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > max) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

bool looks_remote(const std::string& url) {
  return url.find("://") != std::string::npos ||
         (url.find('@') != std::string::npos && url.find(':') != std::string::npos);
}

/// Fetches every branch and tag of origin into the bare clone (branches map onto refs/heads/*).
Status fetch_all(git_repository* repo, const std::string& url) {
  git_remote* raw = nullptr;
  if (git_remote_lookup(&raw, repo, "origin") != 0)
    return failure("the cached clone of " + url + " has no remote 'origin': " + last_git_error(),
                   "delete the cache folder " + std::string(git_repository_path(repo)));
  Remote remote(raw);
  char heads[] = "+refs/heads/*:refs/heads/*";
  char tags[] = "+refs/tags/*:refs/tags/*";
  char* specs[] = {heads, tags};
  git_strarray refspecs{specs, 2};
  git_fetch_options opts;  // the _init functions, not the INIT macros: clang warns on their partial braces
  git_fetch_options_init(&opts, GIT_FETCH_OPTIONS_VERSION);
  opts.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_ALL;
  opts.prune = GIT_FETCH_PRUNE;
  if (git_remote_fetch(remote.get(), &refspecs, &opts, "opforge fetch") != 0)
    return bad_input("cannot fetch from " + url + ": " + last_git_error(),
                     "check the [source] git url and that the repository is reachable");
  return {};
}

}  // namespace

std::string cache_key(const std::string& url) {
  std::string base = url;
  while (!base.empty() && (base.back() == '/')) base.pop_back();
  if (auto slash = base.find_last_of("/:"); slash != std::string::npos) base = base.substr(slash + 1);
  if (base.size() > 4 && base.ends_with(".git")) base.resize(base.size() - 4);
  std::string name;
  for (char c : base)
    name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  if (name.empty() || name[0] == '.') name = "repo" + name;
  // 16 hex digits of the one hash: stable across runs and builds, unlike std::hash.
  return name + "-" + sha256_hex(url).substr(0, 16);
}

namespace {

/// `rel` as a .gitignore pattern that matches exactly that folder from the top of the work tree:
/// anchored ('/'), a folder ('/' at the end), glob characters and spaces escaped.
std::string ignore_rule(const std::string& rel) {
  std::string out = "/";
  for (char c : rel) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\' || c == ' ' || c == '!' || c == '#') out += '\\';
    out += c;
  }
  return out + "/";
}

}  // namespace

Result<std::optional<Info>> inspect(const probe::FileSystem& files, const fs::path& path,
                                    const std::vector<fs::path>& own_outputs) {
  init_libgit2();
  git_repository* raw = nullptr;
  int rc = git_repository_open_ext(&raw, path.c_str(), 0, nullptr);
  if (rc == GIT_ENOTFOUND) return std::optional<Info>{};
  if (rc != 0) return failure("cannot open the git repository at " + path.string() + ": " + last_git_error());
  Repo repo(raw);
  if (git_repository_is_bare(repo.get())) return std::optional<Info>{};
  if (git_repository_head_unborn(repo.get()) == 1) return std::optional<Info>{};

  Commit head = peel_commit(repo.get(), "HEAD");
  if (!head) return failure("cannot read HEAD of " + path.string() + ": " + last_git_error());
  Info info = info_from_commit(head.get());
  info.resolved_from = "HEAD";
  fs::path workdir = fs::path(git_repository_workdir(repo.get())).lexically_normal();
  info.root = workdir;
  if (!workdir.empty() && workdir.filename().empty()) info.root = workdir.parent_path();

  // Only changes under `path` count when it is a folder inside the tree.
  fs::path canon = files.canonical(path).value_or(files.absolute(path).lexically_normal());
  fs::path top = files.canonical(info.root).value_or(info.root);
  std::string rel = canon.lexically_relative(top).generic_string();
  std::string spec = rel;
  char* spec_ptr = spec.data();
  git_status_options opts;
  git_status_options_init(&opts, GIT_STATUS_OPTIONS_VERSION);
  opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
  opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
  if (!rel.empty() && rel != "." && !rel.starts_with("..")) {
    spec += "/";
    spec_ptr = spec.data();
    opts.pathspec = {&spec_ptr, 1};
  }
  // opforge's own outputs are ignored for this look only: git_ignore_add_rule lives in the opened
  // repository object, nothing is written to .gitignore or .git/info/exclude.
  for (const auto& out : own_outputs) {
    fs::path at = files.canonical(out).value_or(out.lexically_normal());
    std::string in_tree = at.lexically_relative(top).generic_string();
    if (in_tree.empty() || in_tree == "." || in_tree.starts_with("..") || in_tree.find('\n') != std::string::npos)
      continue;
    if (git_ignore_add_rule(repo.get(), ignore_rule(in_tree).c_str()) != 0)
      return failure("cannot read the status of " + path.string() + ": " + last_git_error());
  }
  git_status_list* list = nullptr;
  if (git_status_list_new(&list, repo.get(), &opts) != 0)
    return failure("cannot read the status of " + path.string() + ": " + last_git_error());
  StatusList owned(list);
  info.dirty = git_status_list_entrycount(list) > 0;
  return std::optional<Info>(std::move(info));
}

namespace {

/// The url libgit2 clones: local paths made absolute, so that the clone's origin stays valid.
Result<std::string> clone_url_of(const probe::FileSystem& files, const std::string& url) {
  if (looks_remote(url)) return url;
  fs::path local = files.absolute(url);
  if (files.resolved_type(local) == probe::FileType::none)
    return bad_input("[source] git = \"" + url + "\": no such repository (" + local.string() + ")",
                     "use an https://, ssh:// or file:// url, or an existing local path");
  return local.lexically_normal().string();
}

Result<Repo> open_bare(const fs::path& bare, const char* what) {
  git_repository* raw = nullptr;
  if (git_repository_open_bare(&raw, bare.c_str()) != 0)
    return failure(std::string(what) + " " + bare.string() + ": " + last_git_error());
  return Repo(raw);
}

/// Clones into a temporary folder beside `bare`, fetches every tag, then renames it into place.
Result<Repo> clone_into(probe::FileSystem& files, const std::string& url, const std::string& clone_url,
                        const fs::path& slot, const fs::path& bare) {
  if (auto made = files.create_directories(slot); !made)
    return failure("cannot create the source cache " + slot.string() + ": " + made.error().message);
  fs::path tmp = slot / ("repo.git.tmp-" + std::to_string(::getpid()));
  (void)files.remove_all(tmp);
  git_clone_options opts;
  git_clone_options_init(&opts, GIT_CLONE_OPTIONS_VERSION);
  opts.bare = 1;
  git_repository* raw = nullptr;
  if (git_clone(&raw, clone_url.c_str(), tmp.c_str(), &opts) != 0) {
    std::string why = last_git_error();
    (void)files.remove_all(tmp);
    return bad_input("cannot clone " + url + ": " + why,
                     "check the [source] git url and that the repository is reachable");
  }
  git_repository_free(raw);
  {
    Repo clone = OPFORGE_TRY(open_bare(tmp, "cannot reopen the new clone"));
    // A bare clone maps branches to refs/heads/* already; fetch tags that are not on a branch too.
    OPFORGE_CHECK(fetch_all(clone.get(), url));
  }
  // A concurrent fetch may have put its clone in place first: then that one is used.
  if (auto moved = files.rename(tmp, bare); !moved) {
    (void)files.remove_all(tmp);
    if (files.resolved_type(bare / "HEAD") == probe::FileType::none)
      return failure("cannot move the clone into " + bare.string() + ": " + moved.error().message);
  }
  return open_bare(bare, "cannot open the clone");
}

/// `rev` in the clone; a reused clone is fetched again when `rev` is missing or a branch (which moves).
Result<Resolved> find_rev(git_repository* repo, const std::string& url, const std::string& rev, bool reused) {
  std::optional<Resolved> found = resolve(repo, rev);
  if (reused && (!found || found->kind == "branch")) {
    OPFORGE_CHECK(fetch_all(repo, url));
    found = resolve(repo, rev);
  }
  if (found) return std::move(*found);
  auto tags = ref_names(repo, "refs/tags/*", 10);
  auto branches = ref_names(repo, "refs/heads/*", 11);
  return bad_input("rev \"" + rev + "\" is not a tag, branch or commit of " + url,
                   "tags: " + some(tags) + "; branches: " + some(branches));
}

/// Checks `commit` out into a temporary folder, then renames it to `tree`.
Status check_out(probe::FileSystem& files, git_repository* repo, const git_commit* commit, const fs::path& tree,
                 const std::string& what) {
  fs::path tmp = tree.parent_path() / (tree.filename().string() + ".tmp-" + std::to_string(::getpid()));
  (void)files.remove_all(tmp);
  if (auto made = files.create_directories(tmp); !made)
    return failure("cannot create the source cache " + tmp.string() + ": " + made.error().message);
  git_checkout_options co;
  git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
  co.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_DONT_UPDATE_INDEX;
  std::string target = tmp.string();
  co.target_directory = target.c_str();
  if (git_checkout_tree(repo, reinterpret_cast<const git_object*>(commit), &co) != 0) {
    std::string why = last_git_error();
    (void)files.remove_all(tmp);
    return failure("cannot check out " + what + ": " + why);
  }
  if (auto moved = files.rename(tmp, tree); !moved) {
    (void)files.remove_all(tmp);
    if (files.resolved_type(tree) == probe::FileType::none)
      return failure("cannot move the checkout into " + tree.string());
  }
  return {};
}

}  // namespace

Result<Info> fetch(probe::FileSystem& files, const std::string& url, const std::string& rev,
                   const fs::path& cache_dir) {
  init_libgit2();
  if (url.empty()) return bad_input("[source] git is empty", "give a repository url or path");
  if (rev.empty())
    return bad_input("[source] git = \"" + url + "\" has no rev", "pin a tag, branch or commit: rev = \"v1.0.0\"");
  const std::string clone_url = OPFORGE_TRY(clone_url_of(files, url));

  const fs::path slot = cache_dir / cache_key(url);
  const fs::path bare = slot / "repo.git";
  Repo repo;
  git_repository* raw = nullptr;
  const bool reused =
      files.resolved_type(bare / "HEAD") != probe::FileType::none && git_repository_open_bare(&raw, bare.c_str()) == 0;
  if (reused) repo.reset(raw);
  else repo = OPFORGE_TRY(clone_into(files, url, clone_url, slot, bare));

  Resolved found = OPFORGE_TRY(find_rev(repo.get(), url, rev, reused));
  Info info = info_from_commit(found.commit.get());
  info.resolved_from = found.kind;
  info.reused_clone = reused;
  info.root = slot / "trees" / info.commit;
  if (files.resolved_type(info.root) == probe::FileType::none)
    OPFORGE_CHECK(check_out(files, repo.get(), found.commit.get(), info.root, info.commit + " of " + url));
  return info;
}

Status check_release(const Info& info, const std::string& rev, bool rev_is_branch,
                     const std::optional<std::string>& expected_commit) {
  const std::string where = info.root.empty() ? std::string("the source") : info.root.string();
  if (info.commit.empty())
    return bad_input("release build: " + where + " is not a git commit",
                     "release builds need [source] git + rev, or a path inside a git work tree");
  if (info.dirty)
    return bad_input("release build: " + where + " has uncommitted or untracked changes",
                     "commit or remove them (git status), or build without --release");
  if (expected_commit) {
    std::string want = *expected_commit;
    std::transform(want.begin(), want.end(), want.begin(), [](unsigned char c) { return std::tolower(c); });
    if (want.size() < 7 || !is_hex(want))
      return bad_input("release build: expected commit \"" + *expected_commit + "\" is not a commit id",
                       "give at least 7 hex digits");
    if (!info.commit.starts_with(want))
      return bad_input("release build: rev \"" + rev + "\" resolved to " + info.commit +
                           ", but the build record names " + *expected_commit,
                       "pin rev to the recorded commit, or make a new release record");
    return {};
  }
  if (rev_is_branch)
    return bad_input("release build: rev \"" + rev + "\" is a branch, which moves (now at " + info.short_commit + ")",
                     "pin a tag or a commit id (rev = \"" + info.commit +
                         "\"), or pass the commit "
                         "a build record names");
  return {};
}

}  // namespace opforge::source
