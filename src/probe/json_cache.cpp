#include "probe/json_cache.h"

namespace opforge::probe {

JsonCache::JsonCache(FileSystem& files, fs::path file) : fs_(files), file_(std::move(file)) {
  if (file_.empty()) return;
  if (auto text = fs_.read_file(file_)) {
    doc_ = nlohmann::json::parse(*text, nullptr, false);
    if (!doc_.is_object()) doc_ = nlohmann::json::object();
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
  if (fs_.create_directories(file_.parent_path())) (void)fs_.write_file_atomic(file_, doc_.dump(1));
}

}  // namespace opforge::probe
