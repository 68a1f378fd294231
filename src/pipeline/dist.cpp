#include "pipeline/dist.h"

#include <algorithm>
#include <chrono>

#include "util/hash.h"
#include "wheel/wheel.h"

namespace opforge::pipeline {
namespace {

constexpr std::string_view kNew = ".opforge-new", kOld = ".opforge-old";
constexpr std::string_view kRecordSuffix = ".opforge-record.json";

fs::path hidden(const fs::path& file, std::string_view suffix) {
  return file.parent_path() / ("." + file.filename().string() + std::string(suffix));
}

/// True when `record_file` (opforge's own staging name) describes the wheel `wheel` as it is now.
bool describes(probe::Machine m, const fs::path& record_file, const fs::path& wheel) {
  auto text = m.fs.read_file(record_file, record::kMaxBytes);
  if (!text) return false;
  auto rec = record::parse(record_file, *text);
  if (!rec || rec->wheel != wheel.filename().string()) return false;
  auto it = rec->outputs.find(rec->wheel);
  auto bytes = m.fs.read_file(wheel, wheel::Limits{}.archive_bytes);
  return it != rec->outputs.end() && bytes && sha256_hex(*bytes) == it->second;
}

}  // namespace

std::optional<std::pair<fs::path, record::Record>> find_reusable(probe::Machine m, const fs::path& dist,
                                                                 const std::string& name,
                                                                 const std::string& fingerprint) {
  auto wheel = dist / name;
  auto record_path = record::path_for(wheel);
  if (m.fs.type_of(record_path) != probe::FileType::regular) return std::nullopt;
  auto text = m.fs.read_file(record_path, record::kMaxBytes);
  if (!text) return std::nullopt;
  auto rec = record::parse(record_path, *text);
  if (!rec || rec->wheel != name || rec->fingerprint != fingerprint) return std::nullopt;
  auto bytes = m.fs.read_file(wheel, wheel::Limits{}.archive_bytes);
  auto recorded = rec->outputs.find(name);
  if (!bytes || recorded == rec->outputs.end() || sha256_hex(*bytes) != recorded->second) return std::nullopt;
  return std::make_pair(wheel, *rec);
}

Status commit(probe::Machine m, const fs::path& wheel, std::string_view bytes, const record::Record& rec) {
  const auto record_path = record::path_for(wheel);
  OPFORGE_CHECK(m.fs.create_directories(wheel.parent_path()));
  OPFORGE_CHECK(m.fs.write_file_atomic(hidden(wheel, kNew), bytes, 0644));
  OPFORGE_CHECK(m.fs.write_file_atomic(hidden(record_path, kNew), record::render(rec), 0644));
  probe::stop_here_for_tests(m.env, "wheel-written");
  if (m.fs.type_of(record_path) != probe::FileType::none)
    OPFORGE_CHECK(m.fs.rename(record_path, hidden(record_path, kOld)));
  probe::stop_here_for_tests(m.env, "record-stashed");
  OPFORGE_CHECK(m.fs.rename(hidden(wheel, kNew), wheel));
  probe::stop_here_for_tests(m.env, "wheel-renamed");
  OPFORGE_CHECK(m.fs.rename(hidden(record_path, kNew), record_path));
  probe::stop_here_for_tests(m.env, "record-renamed");
  return m.fs.remove(hidden(record_path, kOld));
}

Status recover_dist(probe::Machine m, const fs::path& dist) {
  if (m.fs.resolved_type(dist) != probe::FileType::directory) return {};  // a link to a folder too
  auto names = OPFORGE_TRY(m.fs.list_directory(dist));
  auto present = [&](const std::string& n) { return std::binary_search(names.begin(), names.end(), n); };
  auto strip = [](std::string_view n, std::string_view suffix) {  // ".R.opforge-new" → "R"
    return std::string(n.substr(1, n.size() - 1 - suffix.size()));
  };
  const auto listed = names;  // `names` is refreshed below as files move
  for (const auto& n : listed) {
    if (!n.starts_with(".") || !n.ends_with(std::string(kRecordSuffix) + std::string(kNew))) continue;
    std::string rec = strip(n, kNew);
    std::string whl = rec.substr(0, rec.size() - kRecordSuffix.size());
    // The wheel was renamed into place but its record was not: finish the commit.
    if (!present("." + whl + std::string(kNew)) && present(whl) && describes(m, dist / n, dist / whl)) {
      OPFORGE_CHECK(m.fs.rename(dist / n, dist / rec));
      names = OPFORGE_TRY(m.fs.list_directory(dist));
    }
  }
  for (const auto& n : listed) {
    if (!n.starts_with(".") || !n.ends_with(std::string(kRecordSuffix) + std::string(kOld))) continue;
    std::string rec = strip(n, kOld);
    std::string whl = rec.substr(0, rec.size() - kRecordSuffix.size());
    // The previous record was moved aside and the previous wheel is still there: put it back.
    if (!present(rec) && present(whl) && describes(m, dist / n, dist / whl)) {
      OPFORGE_CHECK(m.fs.rename(dist / n, dist / rec));
      names = OPFORGE_TRY(m.fs.list_directory(dist));
    }
  }
  names = OPFORGE_TRY(m.fs.list_directory(dist));
  for (const auto& n : names) {
    if (!n.starts_with(".")) continue;
    bool ours = ((n.ends_with(kNew) || n.ends_with(kOld)) && (n.find(".whl") != std::string::npos)) ||
                n.find(".whl.tmp-") != std::string::npos ||
                n.find(std::string(kRecordSuffix) + ".tmp-") != std::string::npos ||
                n.find(std::string(kNew) + ".tmp-") != std::string::npos;
    if (ours) OPFORGE_CHECK(m.fs.remove(dist / n));
  }
  return {};
}

Result<std::shared_ptr<void>> lock_dist(probe::Machine m, const fs::path& dist,
                                        const std::function<void(std::string_view)>& on_line, probe::Clock* clock) {
  OPFORGE_CHECK(m.fs.create_directories(dist));
  const fs::path lock_file = dist / ".opforge-dist.lock";
  // A commit takes seconds: poll often, give up after 10 minutes.
  probe::LockWait wait{.poll = std::chrono::milliseconds(50),
                       .limit = std::chrono::minutes(10),
                       .on_wait =
                           [&] {
                             if (on_line)
                               on_line("waiting for another build's commit into " + dist.string() + " (it holds " +
                                       lock_file.filename().string() + ")");
                           },
                       .hint = "a commit takes seconds: if no opforge build is running, remove the lock file",
                       .clock = clock};
  return probe::wait_for(lock_file, wait, [&]() -> Result<probe::LockAttempt> {
    auto lock = m.fs.try_lock(lock_file);
    if (!lock)
      return failure(lock.error().message,
                     "opforge commits wheels into " + dist.string() + ": make it writable, or name another folder");
    return lock;
  });
}

}  // namespace opforge::pipeline
