#pragma once
/// A cache file of keyed JSON entries (probe outcomes, DeepSpeed's compatibility answers, where a
/// Python finds torch). It only saves time: a missing or damaged file is a miss, and failing to
/// write it never fails anything.
#include <nlohmann/json.hpp>

#include <string>

#include "probe/machine.h"

namespace opforge::probe {

class JsonCache {
 public:
  /// `file` empty: nothing is read or written.
  JsonCache(FileSystem& files, fs::path file);
  /// The object stored under `key`, or null.
  const nlohmann::json* find(const std::string& key) const;
  /// Stores and writes the file (temp + rename).
  void store(const std::string& key, nlohmann::json value);

 private:
  FileSystem& fs_;
  fs::path file_;
  nlohmann::json doc_ = nlohmann::json::object();
};

}  // namespace opforge::probe
