#pragma once
/// The compiler cache's environment: the one place that says which variables put ccache in front
/// of a build's compilers and make its hits independent of the folder the build runs in.
#include <filesystem>
#include <map>
#include <string>

namespace opforge::compile {

namespace fs = std::filesystem;

struct CcacheSetup {
  /// CCACHE_BASEDIR: paths under it are hashed relative to the working folder ("/": every path).
  fs::path base_dir;
  std::string remote;        ///< [build] remote: CCACHE_REMOTE_STORAGE; empty: none
  fs::path stats_log;        ///< CCACHE_STATSLOG: this build's own counters; empty: none
  bool depend_mode = false;  ///< CCACHE_DEPEND=1: headers from the compiler's -MMD file
};

/// Sets ccache's variables in `env`: base_dir and hash_dir off (hits across folders), the prefix
/// map left out of the hash (it only rewrites paths it makes identical anyway), then `setup`'s.
void set_ccache_environment(std::map<std::string, std::string>& env, const CcacheSetup& setup);

}  // namespace opforge::compile
