#include "cache/layout.h"
#include "ops/ops.h"
#include "plan/plan.h"
#include "settings/settings.h"
#include "source/sdist.h"
#include "source/source.h"

namespace opforge::plan {

Result<SourceInfo> inspect_source(probe::Machine m, const recipe::Recipe& r, const std::vector<fs::path>& own_outputs) {
  return inspect_source(m, r, own_outputs, true);
}

namespace {

/// A [source] sdist, unpacked into the cache (plan downloads nothing, but unpacks a local archive or
/// an earlier download: neither runs anything).
Result<SourceInfo> sdist_source(probe::Machine m, const recipe::Recipe& r, bool fetch) {
  SourceInfo out;
  const fs::path dir = cache::folder(settings::cache_dir(m.env), cache::Kind::sdist);
  const std::string& spec = *r.source.sdist;
  if (auto entry = source::sdist_entry(spec, r.source.sha256, dir); entry && !fetch) {
    if (!source::in_cache(m.fs, spec, *entry)) {
      out.not_fetched = spec + " (sha256 " + *r.source.sha256 + ", into " + entry->string() + ")";
      return out;
    }
  }
  auto got = OPFORGE_TRY(source::fetch_sdist(m, spec, r.source.sha256, dir));
  if (auto held = m.fs.try_lock_shared(cache::entry_lock(got.entry)); held && *held) out.hold = **held;
  (void)m.fs.write_file_atomic(got.entry / cache::kLastUse, "");
  out.root = got.root;
  if (r.build.release && !r.source.sha256)
    return bad_input("[build] release = true needs the sdist pinned: " + spec + " has no [source] sha256",
                     "add sha256 = \"" + got.sha256 + "\" (the archive's now), or set release = false");
  return out;
}

}  // namespace

Result<SourceInfo> inspect_source(probe::Machine m, const recipe::Recipe& r, const std::vector<fs::path>& own_outputs,
                                  bool fetch) {
  if (r.source.sdist) return sdist_source(m, r, fetch);
  SourceInfo out;
  std::optional<source::Info> info;
  if (r.source.git && !fetch) {
    // `plan` writes nothing: a repository not cloned yet is described, not fetched.
    auto clone =
        cache::folder(settings::cache_dir(m.env), cache::Kind::git) / source::cache_key(*r.source.git) / "repo.git";
    if (m.fs.resolved_type(clone) != probe::FileType::directory) {
      out.not_fetched =
          *r.source.git + " at " + r.source.rev.value_or("HEAD") + " (into " + clone.parent_path().string() + ")";
      return out;
    }
  }
  if (r.source.git) {
    auto cache = cache::folder(settings::cache_dir(m.env), cache::Kind::git);
    info = OPFORGE_TRY(source::fetch(m.fs, *r.source.git, r.source.rev.value_or("HEAD"), cache));
    // The clone's use, for `opforge cache` (least recently used first) and prune's lock.
    const fs::path slot = cache / source::cache_key(*r.source.git);
    if (auto held = m.fs.try_lock_shared(cache::entry_lock(slot)); held && *held) out.hold = **held;
    (void)m.fs.write_file_atomic(slot / cache::kLastUse, "");
  } else {
    out.root = r.source.path.value_or(r.dir);
    info = OPFORGE_TRY(source::inspect(m.fs, out.root, own_outputs));
  }
  if (info) {
    if (r.source.git) out.root = info->root;
    out.commit = info->commit;
    out.dirty = info->dirty;
    out.commit_time = info->commit_time;
  }
  if (r.build.release) {
    if (!info)
      return bad_input("[build] release = true needs a git source: " + out.root.string() + " has no commit",
                       "build from a git checkout, or set release = false");
    OPFORGE_CHECK(source::check_release(*info, r.source.rev.value_or(""), info->resolved_from == "branch",
                                        r.build.release_commit));
  }
  return out;
}

}  // namespace opforge::plan
