#include "probe/machine.h"

namespace opforge::probe {

fs::path data_dir(const FileSystem& fs) {
  // Both are compiled in (CMakeLists.txt): the checkout wins so that a development build uses
  // the ops and Python package beside it, not an older installed copy.
  const fs::path source(OPFORGE_SOURCE_DIR);
  if (fs.resolved_type(source / "src/python/opforge_ops") == FileType::directory) return source;
  return fs::path(OPFORGE_DATA_DIR);
}

fs::path default_cache_dir(const Environment& env) {
  // Only absolute folders: a relative HOME or XDG_CACHE_HOME (the XDG spec says to ignore those)
  // would put the cache inside the working folder, often the source tree, making it dirty.
  auto absolute = [&](const char* var) -> std::optional<fs::path> {
    auto v = env.get(var);
    if (!v || v->empty() || v->find('\0') != std::string::npos || !fs::path(*v).is_absolute()) return std::nullopt;
    return fs::path(*v);
  };
  if (auto v = env.get("OPFORGE_CACHE_DIR"); v && !v->empty()) return *v;  // the user's choice
  if (auto v = absolute("XDG_CACHE_HOME")) return *v / "opforge";
  if (auto v = absolute("HOME")) return *v / ".cache" / "opforge";
  return {};
}

}  // namespace opforge::probe
