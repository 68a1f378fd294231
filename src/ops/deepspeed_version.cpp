#include "ops/deepspeed_version.h"

#include <algorithm>
#include "util/scan.h"
#include "util/strings.h"

namespace opforge::ops {

std::string set_deepspeed_version(const std::string& text, const std::string& version) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    auto nl = text.find('\n', start);
    std::size_t end = nl == std::string::npos ? text.size() : nl + 1;
    std::string line = text.substr(start, end - start);
    if (line.starts_with("version=")) line = "version='" + version + "'" + (nl == std::string::npos ? "" : "\n");
    out += line;
    start = end;
  }
  return out;
}

std::vector<std::string> deepspeed_installed_ops(const std::string& text) {
  std::vector<std::string> out;
  for (auto& line : strings::split(text, '\n')) {
    if (!line.starts_with("installed_ops=")) continue;
    // Every `'name': True` (or `"name": 1`) entry of the dict literal, in one pass.
    const std::string_view rest(line);
    for (std::size_t i = 0; i < rest.size(); ++i) {
      if (!scan::is_quote(rest[i])) continue;
      scan::Cursor c{rest.substr(i + 1)};
      const auto name = c.run([](char ch) { return scan::is_alnum(ch) || ch == '_'; });
      if (name.empty() || c.done() || !scan::is_quote(c.rest.front())) continue;
      c.rest.remove_prefix(1);
      c.spaces();
      if (!c.literal(":")) continue;
      c.spaces();
      if (!c.literal("True") && !c.literal("1")) continue;
      out.emplace_back(name);
      i = rest.size() - c.rest.size() - 1;
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace opforge::ops
