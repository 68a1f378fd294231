#pragma once
/// The compiler cache's environment: the one place that says which variables put ccache in front
/// of a build's compilers and make its hits independent of the folder the build runs in.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "util/version.h"

namespace opforge::compile {

struct CcacheSetup {
  /// CCACHE_BASEDIR: paths under it are hashed relative to the working folder ("/": every path).
  std::filesystem::path base_dir;
  std::string remote;               ///< [build] remote: CCACHE_REMOTE_STORAGE; empty: none
  std::filesystem::path stats_log;  ///< CCACHE_STATSLOG: this build's own counters; empty: none
  bool depend_mode = false;         ///< CCACHE_DEPEND=1: headers from the compiler's -MMD file
};

/// ccache's variables: base_dir and hash_dir off (hits across folders), the prefix map left out of
/// the hash (it only rewrites paths it makes identical anyway), then `setup`'s.
std::map<std::string, std::string> ccache_environment(const CcacheSetup& setup);

/// The version `ccache --version` prints on its first line ("ccache version 4.7.5"); nullopt for
/// anything else.
std::optional<Version> parse_ccache_version(std::string_view text);

/// Whether a build's own counters can be read from this ccache: the stats log and the counter
/// names parse_ccache_stats_log reads (remote_storage_hit, with CCACHE_REMOTE_STORAGE) are ccache
/// 4.6's and later's (its release notes: secondary storage renamed remote storage).
bool reads_stats_log(const Version& ccache);

}  // namespace opforge::compile
