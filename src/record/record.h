#pragma once
/// The build record written beside each wheel: every input and every output's sha256, so that
/// `opforge verify RECORD` can rebuild and compare.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probe/machine.h"
#include "util/error.h"

namespace opforge::record {

namespace fs = std::filesystem;

struct Record {
  nlohmann::json inputs;                        ///< recipe, source, toolkit, compiler, arches, flags, env
  std::map<std::string, std::string> outputs;   ///< name → sha256 (each .so, the wheel)
  std::string wheel;                            ///< wheel file name
};

/// "<dist>/<wheel>.opforge-record.json".
fs::path path_for(const fs::path& wheel_path);
std::string render(const Record& record);
Result<Record> parse(const fs::path& file, std::string_view text);
Status write(probe::FileSystem& fs, const fs::path& path, const Record& record);

/// Reads and parses a record file.
Result<Record> load(const probe::FileSystem& fs, const fs::path& file);

/// The source commit a record names; bad_input when it names none (the build was not from git).
Result<std::string> source_commit(const fs::path& file, const Record& record);

/// Hex sha256 of bytes.
std::string sha256_hex(std::string_view bytes);

/// Names of outputs whose hashes differ (or that are missing on one side).
std::vector<std::string> differences(const Record& expected, const Record& actual);

}  // namespace opforge::record
