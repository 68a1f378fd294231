#include "compile/compiler_cache/compiler_cache.h"

#include "util/strings.h"

namespace opforge::compile {

std::map<std::string, std::string> ccache_environment(const CcacheSetup& setup) {
  std::map<std::string, std::string> env;
  env["CCACHE_BASEDIR"] = setup.base_dir.string();
  env["CCACHE_NOHASHDIR"] = "1";
  env["CCACHE_IGNOREOPTIONS"] = "-ffile-prefix-map=* -Xcompiler=-ffile-prefix-map=*";
  if (setup.depend_mode) env["CCACHE_DEPEND"] = "1";
  if (!setup.remote.empty()) env["CCACHE_REMOTE_STORAGE"] = setup.remote;
  if (!setup.stats_log.empty()) env["CCACHE_STATSLOG"] = setup.stats_log.string();
  return env;
}

std::optional<Version> parse_ccache_version(std::string_view text) {
  constexpr std::string_view prefix = "ccache version ";
  const std::string_view first = text.substr(0, text.find('\n'));
  if (!first.starts_with(prefix)) return std::nullopt;
  const std::string_view rest = strings::trim(first.substr(prefix.size()));
  if (rest.empty() || rest.front() < '0' || rest.front() > '9') return std::nullopt;
  return parse_version(rest);
}

bool reads_stats_log(const Version& ccache) { return ccache >= Version{4, 6}; }

}  // namespace opforge::compile
