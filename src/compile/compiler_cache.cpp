#include "compile/compiler_cache.h"

namespace opforge::compile {

void set_ccache_environment(std::map<std::string, std::string>& env, const CcacheSetup& setup) {
  env["CCACHE_BASEDIR"] = setup.base_dir.string();
  env["CCACHE_NOHASHDIR"] = "1";
  env["CCACHE_IGNOREOPTIONS"] = "-ffile-prefix-map=* -Xcompiler=-ffile-prefix-map=*";
  if (setup.depend_mode) env["CCACHE_DEPEND"] = "1";
  if (!setup.remote.empty()) env["CCACHE_REMOTE_STORAGE"] = setup.remote;
  if (!setup.stats_log.empty()) env["CCACHE_STATSLOG"] = setup.stats_log.string();
}

}  // namespace opforge::compile
