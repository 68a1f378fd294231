#include "compile/scratch/scratch.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "cache/layout.h"
#include "probe/links.h"
#include "util/hash.h"
#include "util/strings.h"

namespace opforge::compile {

namespace fs = std::filesystem;

namespace {

struct TreeEntry {
  fs::path rel;
  probe::FileType type;
  std::string content;  ///< file bytes, or the symlink's target
  unsigned mode = 0644;
};

bool skipped(const fs::path& rel) {
  const std::string name = rel.filename().string();
  if (name == ".git" || name == "__pycache__") return true;
  const bool top = !rel.has_parent_path() || rel.parent_path().empty();
  return top && (name == "build" || name == "dist");
}

/// Bounds of the copy: a link followed back into the tree unrolled it until the kernel's limit
/// (123 entries, 83 levels, 794 MB in 48 s for two such links).
constexpr int kMaxDepth = 64;
constexpr std::uint64_t kMaxBytes = 4ULL << 30;

struct Walk {
  std::vector<fs::path> open;  ///< the real folders being walked, outermost first
  std::uint64_t bytes = 0;
  fs::path cache;  ///< the cache folder's real path: the copy must never take it in
  fs::path trees;  ///< its scratch trees' real path
};

/// The cache folder, a folder around it, or a scratch tree outside the source: a source tree that
/// holds one (a link to it, a source folder around the cache) would copy the trees made there into
/// the next one, which then never resumes. A source inside the cache is fine ([source] git checks
/// out there), and so are a source's own folders when it is itself a scratch tree.
bool holds_scratch_trees(const fs::path& real, const Walk& walk) {
  if (walk.cache.empty()) return false;
  return probe::is_within(walk.cache, real) ||
         (probe::is_within(real, walk.trees) && !probe::is_within(real, walk.open.front()));
}

Status collect_tree(probe::Machine m, const fs::path& root, const fs::path& rel, std::vector<TreeEntry>& out,
                    Walk& walk) {
  if (static_cast<int>(walk.open.size()) > kMaxDepth)
    return bad_input("the source tree is more than " + std::to_string(kMaxDepth) + " folders deep at '" +
                         strings::cut((root / rel).string()) + "'",
                     "a link that leads back into the tree makes it endless: remove it, or make it relative");
  auto names = m.fs.list_directory(root / rel);
  if (!names) return opforge::unexpected(names.error());
  for (auto& n : *names) {
    fs::path r = rel.empty() ? fs::path(n) : rel / n;
    if (skipped(r)) continue;
    fs::path p = root / r;
    auto type = m.fs.type_of(p);
    if (type == probe::FileType::symlink) {
      auto target = OPFORGE_TRY(m.fs.read_symlink(p));
      // A link that stays inside the tree is kept as a link (DeepSpeed's deepspeed/ops/op_builder
      // -> ../../op_builder); any other is copied as what it points to.
      auto inside = (r.parent_path() / target).lexically_normal();
      if (!target.is_absolute() && !inside.empty() && *inside.begin() != "..") {
        out.push_back({r, type, target.string(), 0777});
        continue;
      }
      type = m.fs.resolved_type(p);
      if (type == probe::FileType::directory) {
        // Followed into a folder that is being walked already: copying it would never end.
        auto real = m.fs.canonical(p);
        if (real && std::find(walk.open.begin(), walk.open.end(), *real) != walk.open.end())
          return bad_input("'" + strings::cut(p.string()) + "' is a symbolic link to '" + strings::cut(real->string()) +
                               "', which holds it: a loop the copy cannot follow",
                           "remove the link, or make it relative (a relative link inside the tree is kept as a link)");
      }
    }
    if (type == probe::FileType::directory) {
      const fs::path real = m.fs.canonical(p).value_or(p);
      if (holds_scratch_trees(real, walk))
        return bad_input("'" + strings::cut(p.string()) + "' holds opforge's cache folder (" +
                             strings::cut(walk.cache.string()) +
                             ") or a scratch tree made there: the copy would take in the build trees made there",
                         "remove the link, or build from a folder that does not hold the cache (OPFORGE_CACHE_DIR)");
      out.push_back({r, type, "", 0755});
      walk.open.push_back(real);
      OPFORGE_CHECK(collect_tree(m, root, r, out, walk));
      walk.open.pop_back();
    } else if (type == probe::FileType::regular) {
      const auto size = m.fs.stamp(p);
      if (size) walk.bytes += size->size;
      if (walk.bytes > kMaxBytes)
        return bad_input("the source tree holds more than " + std::to_string(kMaxBytes >> 30) + " GiB of files (at '" +
                             strings::cut(p.string()) + "'), more than a build copies",
                         "keep large data out of the source tree, or build with [build] backend = \"native\"");
      out.push_back({r, type, OPFORGE_TRY(m.fs.read_file(p, kMaxBytes)), m.fs.is_executable(p) ? 0755u : 0644u});
    }
  }
  return {};
}

std::string stamp_text(const std::string& content_hash, const std::string& key) {
  return "opforge scratch tree 1\ncontent " + content_hash + "\nkey " + key + "\n";
}

/// Resumes the tree at out.root when its stamp is `stamp` (out.resumed), writing again each source
/// file that differs from `entries`; otherwise says in out.not_why why a tree there is not resumed.
Status resume_kept_tree(probe::Machine m, ScratchTree& out, const std::vector<TreeEntry>& entries,
                        const std::string& stamp) {
  if (m.fs.type_of(out.root) != probe::FileType::directory) return {};
  // A stamp is one short line: a FIFO, a device or a folder in its place is said, and the tree
  // is copied afresh (its stamp written again).
  const fs::path stamp_file = out.root / kResumeStamp;
  if (m.fs.type_of(stamp_file) == probe::FileType::none) {
    out.not_why = "it has no complete copy of the source (" + std::string(kResumeStamp) + " is missing)";
    return {};
  }
  auto kept = m.fs.read_file(stamp_file, 64 * 1024);
  if (!kept) {
    out.not_why = kept.error().message + ", so the stamp is ignored and made again";
    return {};
  }
  if (*kept != stamp) {
    out.not_why = "it was made for other compile commands (compilers, flags, environment or toolkit changed)";
    return {};
  }
  // A folder of the tree replaced by a link to one elsewhere (or any link out): the resumed build
  // would write through it, and its wheel pack what lies there. Copied afresh, the link named.
  if (auto link = probe::link_out_in_tree(m.fs, out.root)) {
    out.not_why =
        "'" + link->link.string() + "' is a symbolic link to '" + link->target.string() + "', out of the build tree";
    return {};
  }
  for (auto& e : entries) {
    const fs::path dst = out.root / e.rel;
    const auto type = m.fs.type_of(dst);
    if (e.type == probe::FileType::directory) {
      if (type != probe::FileType::directory) OPFORGE_CHECK(m.fs.create_directories(dst));
      continue;
    }
    if (e.type == probe::FileType::symlink) {
      auto target = m.fs.read_symlink(dst);
      if (type == probe::FileType::symlink && target && target->string() == e.content) continue;
      OPFORGE_CHECK(m.fs.remove_all(dst));
      OPFORGE_CHECK(m.fs.create_symlink(e.content, dst));
      ++out.restored;
      continue;
    }
    if (type == probe::FileType::regular)
      if (auto bytes = m.fs.read_file(dst); bytes && *bytes == e.content) continue;  // untouched: its mtime stays
    if (type != probe::FileType::none && type != probe::FileType::regular) OPFORGE_CHECK(m.fs.remove_all(dst));
    OPFORGE_CHECK(m.fs.write_file_atomic(dst, e.content, e.mode));
    ++out.restored;
  }
  out.resumed = true;
  return {};
}

}  // namespace

Result<ScratchTree> make_scratch_tree(probe::Machine m, const fs::path& source, const fs::path& cache_dir,
                                      const std::function<void(std::string_view)>& on_wait,
                                      const ScratchResume& resume) {
  if (cache_dir.empty()) return bad_input("no cache folder for the build tree", "set OPFORGE_CACHE_DIR (or HOME)");
  std::vector<TreeEntry> entries;
  Walk walk;
  walk.cache = m.fs.canonical(cache_dir).value_or(cache_dir.lexically_normal());
  walk.trees = cache::folder(walk.cache, cache::Kind::tree);
  walk.open.push_back(m.fs.canonical(source).value_or(source));
  if (auto st = collect_tree(m, source, {}, entries, walk); !st) {
    if (st.error().kind == ErrorKind::bad_input) return opforge::unexpected(st.error());
    return failure("cannot read the source tree " + source.string() + ": " + st.error().message);
  }
  std::string digest;
  for (auto& e : entries)
    digest += e.rel.string() + "\n" + std::to_string(static_cast<int>(e.type)) + " " + std::to_string(e.mode) + " " +
              sha256_hex(e.content) + "\n";
  ScratchTree out;
  out.content_hash = sha256_hex(digest);
  const fs::path trees = cache::folder(cache_dir, cache::Kind::tree);
  out.root = trees / out.content_hash.substr(0, 16);
  OPFORGE_CHECK(m.fs.create_directories(trees));
  const fs::path lock_file = tree_lock(out.root);
  // A whole command build may hold it: polled every second for up to 4 hours.
  out.lock = OPFORGE_TRY(probe::wait_for_lock(
      m.fs, lock_file,
      probe::LockWait{.poll = std::chrono::seconds(1),
                      .limit = std::chrono::hours(4),
                      .on_wait =
                          [&] {
                            if (on_wait)
                              on_wait("waiting for another build of the same tree (" + lock_file.string() + ")");
                          },
                      .hint = "remove the lock file if no build is running"}));
  const fs::path stamp = out.root / kResumeStamp;
  std::string key;
  if (resume.key) {
    key = resume.key(out.root);
    OPFORGE_CHECK(resume_kept_tree(m, out, entries, stamp_text(out.content_hash, key)));
    if (out.resumed) return out;
  }
  OPFORGE_CHECK(m.fs.remove_all(out.root));
  OPFORGE_CHECK(m.fs.create_directories(out.root));
  for (auto& e : entries) {
    fs::path dst = out.root / e.rel;
    if (e.type == probe::FileType::directory) OPFORGE_CHECK(m.fs.create_directories(dst));
    else if (e.type == probe::FileType::symlink) OPFORGE_CHECK(m.fs.create_symlink(e.content, dst));
    else OPFORGE_CHECK(m.fs.write_file_atomic(dst, e.content, e.mode));
  }
  // Written last: a tree whose copy was cut short has none, and is copied again.
  if (resume.key) OPFORGE_CHECK(m.fs.write_file_atomic(stamp, stamp_text(out.content_hash, key)));
  // Its size as copied (the build's outputs come on top): listing the cache never walks it.
  std::uint64_t bytes = 0;
  for (auto& e : entries) bytes += e.type == probe::FileType::regular ? e.content.size() : 0;
  (void)probe::record_size(m.fs, out.root, bytes);
  return out;
}

std::string resume_key(const std::vector<std::string>& command, const std::vector<std::string>& versions,
                       const std::map<std::string, std::string>& env, const std::vector<std::string>& also) {
  static constexpr std::string_view kNames[] = {
      "PATH",    "PYTHONPATH",        "LD_LIBRARY_PATH", "CC", "CXX", "CFLAGS", "CXXFLAGS", "CPPFLAGS",
      "LDFLAGS", "SOURCE_DATE_EPOCH", "PYTHONHASHSEED"};
  static constexpr std::string_view kPrefixes[] = {"CUDA",    "NVCC_",  "TORCH_",  "PYTORCH_",
                                                   "CCACHE_", "CMAKE_", "SKBUILD_"};
  // More jobs compile the same objects.
  static constexpr std::string_view kJobs[] = {"MAX_JOBS", "CMAKE_BUILD_PARALLEL_LEVEL"};
  std::string digest = "command";
  for (auto& a : command) digest += '\0' + a;
  digest += "\nversions";
  for (auto& v : versions) digest += '\0' + v;
  digest += '\n';
  for (auto& [k, v] : env) {
    const bool named = std::find(std::begin(kNames), std::end(kNames), k) != std::end(kNames) ||
                       std::find(also.begin(), also.end(), k) != also.end();
    const bool prefixed =
        std::any_of(std::begin(kPrefixes), std::end(kPrefixes), [&](auto p) { return k.starts_with(p); });
    const bool jobs = std::find(std::begin(kJobs), std::end(kJobs), k) != std::end(kJobs);
    if ((named || prefixed) && !jobs) digest += k + '=' + v + '\n';
  }
  return sha256_hex(digest);
}

fs::path tree_lock(const fs::path& root) { return cache::entry_lock(root); }

}  // namespace opforge::compile
