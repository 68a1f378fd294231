#pragma once
/// The build record written beside each wheel: every input and every output's sha256, so that
/// `opforge verify RECORD` can rebuild and compare.
///
/// A record is untrusted input when read back (a user may pass any file, dist/ may hold anything):
/// parse() checks its size, nesting depth, format version and the type of every field opforge
/// reads, and returns bad_input naming the field (`inputs.source.release`) instead of throwing.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probe/machine.h"
#include "util/error.h"

namespace opforge::record {

namespace fs = std::filesystem;

/// The format this opforge writes and reads: `"format": "opforge-build-record/1"`. Adding a field
/// keeps the version (readers ignore fields they do not know); the version changes only when a
/// field a reader relies on changes meaning or type. Newer versions are refused by number.
inline constexpr int kFormatVersion = 1;
/// Records are a few kilobytes; anything beyond these is not one of ours.
inline constexpr std::size_t kMaxBytes = 4 * 1024 * 1024;
inline constexpr int kMaxDepth = 32;

/// The recorded source tree (inputs.source).
struct Source {
  std::string root;
  std::string commit;  ///< full hex, empty when the build was not made from git
  bool dirty = false;
  bool release = false;
};

struct Record {
  int format_version = kFormatVersion;
  /// Every input as written (recipe, source, toolkit, compiler, arches, flags, env, fingerprint).
  /// The writer fills this; parse() also fills the typed views below from it.
  nlohmann::json inputs = nlohmann::json::object();
  std::map<std::string, std::string> outputs;  ///< name → sha256 (each .so, the wheel)
  std::string wheel;                           ///< wheel file name (no folder; empty when absent)

  // Typed views of `inputs` (filled by parse(); absent fields stay empty).
  std::string recipe_path;                         ///< inputs.recipe.path
  std::string recipe_sha256;                       ///< inputs.recipe.sha256
  Source source;                                   ///< inputs.source
  std::map<std::string, std::string> environment;  ///< inputs.environment
  std::vector<std::string> command;                ///< inputs.command (backend = "command")
  std::string fingerprint;                         ///< inputs.fingerprint (native builds)
};

/// The environment variables a build records and `verify` replays: those the settings table
/// (settings/settings.h) says change the wheel (DeepSpeed's DS_*, PyTorch's TORCH_CUDA_ARCH_LIST
/// and MAX_JOBS, CUDA_HOME, CUDA_PATH, SOURCE_DATE_EPOCH, the compilers' CFLAGS, CXXFLAGS,
/// LDFLAGS, NVCC_APPEND_FLAGS, NVCC_PREPEND_FLAGS). The build records each one that is set; parse()
/// refuses any other name in inputs.environment, so that a hand-written record cannot hand the
/// rebuild LD_PRELOAD or PATH; the rebuild sees exactly the recorded ones (one unset at record
/// time stays unset).
bool recorded_variable(std::string_view name);
/// recorded_variable's list as users read it: "DS_*, TORCH_CUDA_ARCH_LIST, ...".
std::string recorded_variables();

/// "<dist>/<wheel>.opforge-record.json".
fs::path path_for(const fs::path& wheel_path);
std::string render(const Record& record);
/// Parses untrusted text; bad_input (with `file` and the offending field) for anything that is not
/// a record of a format version this opforge reads.
Result<Record> parse(const fs::path& file, std::string_view text);
Status write(probe::FileSystem& fs, const fs::path& path, const Record& record);

/// Reads (a regular file of at most kMaxBytes) and parses a record file.
Result<Record> load(const probe::FileSystem& fs, const fs::path& file);

/// The source commit a record names; bad_input when it names none (the build was not from git).
Result<std::string> source_commit(const fs::path& file, const Record& record);

/// Names of outputs whose hashes differ (or that are missing on one side).
std::vector<std::string> differences(const Record& expected, const Record& actual);

}  // namespace opforge::record
