#include "ops/deepspeed_version.h"

#include <algorithm>
#include <regex>

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
    static const std::regex entry(R"(['"]([A-Za-z0-9_]+)['"]\s*:\s*(True|1))");
    std::string rest(line);
    for (std::sregex_iterator it(rest.begin(), rest.end(), entry), end; it != end; ++it) out.push_back((*it)[1].str());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace opforge::ops
