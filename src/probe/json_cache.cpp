#include "probe/json_cache.h"
#include "util/json.h"
#include "util/json_read.h"

namespace opforge::probe {

JsonCache::JsonCache(FileSystem& files, fs::path file) : fs_(files), file_(std::move(file)) {
  if (file_.empty()) return;
  // A FIFO, a device or a damaged text in its place: said once, and the next store writes afresh.
  if (auto text = read_kept_file(fs_, file_)) {
    auto doc = util::json_parse_checked(*text);
    if (doc && doc->is_object()) doc_ = std::move(*doc);
    else fs_.report_ignored(file_, file_.string() + ": " + (doc ? "not a JSON object" : doc.error().message));
  }
}

const nlohmann::json* JsonCache::find(const std::string& key) const {
  if (file_.empty()) return nullptr;
  auto it = doc_.find(key);
  return it != doc_.end() && it->is_object() ? &*it : nullptr;
}

void JsonCache::store(const std::string& key, nlohmann::json value) {
  if (file_.empty()) return;
  doc_[key] = std::move(value);
  if (fs_.create_directories(file_.parent_path())) (void)fs_.write_file_atomic(file_, util::json_dump(doc_, 1));
}

Result<ProcessResult> run_remembered(Machine m, const Command& command) {
  const fs::path dir = default_cache_dir(m.env);
  const bool plain = !command.env && command.cwd.empty() && !command.stdin_text && command.output == Output::capture &&
                     !command.argv.empty() && fs::path(command.argv[0]).is_absolute();
  if (dir.empty() || !plain) return m.proc.run(command);
  auto real = m.fs.canonical(command.argv[0]);
  auto st = real ? m.fs.stamp(*real) : std::nullopt;
  if (!st) return m.proc.run(command);
  const nlohmann::json key_json{
      {"argv", command.argv}, {"real", real->string()}, {"stamp", {st->size, st->mtime_ns, st->inode}}};
  const std::string key = util::json_dump(key_json);
  JsonCache cache(m.fs, dir / "versions.json");
  if (const auto* hit = cache.find(key)) {
    auto out = util::json_read::text(*hit, "out");
    auto err = util::json_read::text(*hit, "err");
    if (out && err) {
      ProcessResult r;
      r.exit_code = 0;
      r.out = std::move(*out);
      r.err = std::move(*err);
      return r;
    }
  }
  auto r = m.proc.run(command);
  if (r && r->ok()) cache.store(key, {{"out", r->out}, {"err", r->err}});
  return r;
}

}  // namespace opforge::probe
