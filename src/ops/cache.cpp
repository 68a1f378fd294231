#include "ops/cache.h"

namespace opforge::ops {

JsonCache::JsonCache(probe::FileSystem& files, fs::path file) : fs_(files), file_(std::move(file)) {
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

ProgramPath locate_program(probe::Machine m, const std::string& name) {
  ProgramPath p{name, {}};
  if (name.find('/') == std::string::npos)
    if (auto found = probe::find_on_path(m.fs, name, m.env.get("PATH").value_or(""))) p.found = *found;
  p.real = m.fs.canonical(p.found).value_or(p.found);
  return p;
}

}  // namespace opforge::ops
