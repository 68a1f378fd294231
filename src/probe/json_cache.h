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

/// Runs a command that only reports on a program (`nvcc --version`, `gcc -dumpversion`), or answers
/// from <cache>/versions.json (default_cache_dir) when the same argv ran before against a program
/// file with the same real path, size, modification time and inode. Only successful runs are
/// remembered. A command with its own environment, folder or input always runs.
Result<ProcessResult> run_remembered(Machine m, const Command& command);

}  // namespace opforge::probe
