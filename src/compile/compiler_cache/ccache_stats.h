#pragma once
/// One build's ccache statistics, read from ccache's stats log.
#include <string>
#include <string_view>

namespace opforge::compile {

/// What ccache did during one build.
struct CacheStats {
  int calls = 0;        ///< compiler calls that went through ccache
  int hits = 0;         ///< results taken from the cache (local or remote)
  int remote_hits = 0;  ///< of those, from remote storage
  int misses = 0;       ///< compiled and stored
};

/// Parses ccache's stats log (its `stats_log` setting: "# <source>" per call, then the names of
/// the counters that call bumped); calls that neither hit nor missed were not cacheable.
CacheStats parse_ccache_stats_log(std::string_view text);

/// "ccache: 9 of 9 compiles were cache hits (100%), 9 from remote storage"
std::string describe_cache_stats(const CacheStats& stats);

}  // namespace opforge::compile
