// What is common to every FileSystem's reads: a kept file that cannot be used, said once.
#include <iostream>
#include <mutex>
#include <set>

#include "probe/machine.h"

namespace opforge::probe {

void FileSystem::report_ignored(const fs::path& path, const std::string& why) const {
  // Once per file and process: probes.json is opened for every op, one line is enough.
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mu);
  if (!said.insert(path.string()).second) return;
  std::cerr << "opforge: warning: " << why << ": ignored and made again\n";
}

std::optional<std::string> read_kept_file(const FileSystem& fs, const fs::path& path, std::uint64_t max_bytes) {
  // Missing is the usual case (nothing kept yet) and says nothing; a FIFO, a device, a folder or a
  // file too large where a cache file belongs is said, and the caller writes a fresh one.
  if (fs.type_of(path) == FileType::none) return std::nullopt;
  auto text = fs.read_file(path, max_bytes);
  if (text) return std::move(*text);
  fs.report_ignored(path, text.error().message);
  return std::nullopt;
}

}  // namespace opforge::probe
