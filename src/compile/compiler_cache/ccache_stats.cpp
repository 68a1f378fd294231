/// One build's ccache statistics (compile/compiler_cache/ccache_stats.h): its stats log parsed and summed up.
#include "compile/compiler_cache/ccache_stats.h"

#include "util/strings.h"

namespace opforge::compile {

CacheStats parse_ccache_stats_log(std::string_view text) {
  CacheStats s;
  bool hit = false, remote = false, miss = false, open = false;
  auto close_call = [&] {
    if (!open) return;
    s.hits += hit;
    s.remote_hits += hit && remote;
    s.misses += !hit && miss;
    hit = remote = miss = false;
  };
  for (auto line : strings::split(text, '\n')) {
    if (line.starts_with("# ")) {
      close_call();
      open = true;
      ++s.calls;
    } else if (line == "direct_cache_hit" || line == "preprocessed_cache_hit") {
      hit = true;
    } else if (line == "remote_storage_hit") {
      remote = true;
    } else if (line == "cache_miss") {
      miss = true;
    }
  }
  close_call();
  return s;
}

std::string describe_cache_stats(const CacheStats& s) {
  if (s.calls == 0) return "ccache: no compiler calls";
  const int cacheable = s.hits + s.misses;
  std::string out =
      "ccache: " + std::to_string(s.hits) + " of " + std::to_string(cacheable) + " compiles were cache hits";
  if (cacheable) out += " (" + std::to_string((200 * s.hits + cacheable) / (2 * cacheable)) + "%)";
  if (s.remote_hits) out += ", " + std::to_string(s.remote_hits) + " from remote storage";
  if (s.calls > cacheable) out += "; " + std::to_string(s.calls - cacheable) + " calls not cacheable";
  return out;
}

}  // namespace opforge::compile
