#pragma once
/// What the ops stage keeps in the cache folder between plans: probe outcomes (probes.json) and
/// DeepSpeed's compatibility answers (deepspeed-compat.json), each a JSON object of keyed entries.
#include <nlohmann/json.hpp>

#include <string>

#include "probe/machine.h"

namespace opforge::ops {

namespace fs = std::filesystem;

/// One JSON object file of keyed entries. It only saves time: a missing or damaged file is a miss,
/// and failing to write it never fails a plan.
class JsonCache {
 public:
  /// `file` empty: nothing is read or written.
  JsonCache(probe::FileSystem& files, fs::path file);
  /// The object stored under `key`, or null.
  const nlohmann::json* find(const std::string& key) const;
  void store(const std::string& key, nlohmann::json value);

 private:
  probe::FileSystem& fs_;
  fs::path file_;
  nlohmann::json doc_ = nlohmann::json::object();
};

/// A program as a command names it: `found` is where it runs from (looked up on PATH when the
/// name has no '/'), `real` the file behind it (symlinks resolved), whose stamp keys a cache entry.
struct ProgramPath {
  fs::path found, real;
};
ProgramPath locate_program(probe::Machine m, const std::string& name);

}  // namespace opforge::ops
