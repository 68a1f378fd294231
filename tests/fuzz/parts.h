#pragma once
// An input of several texts for one harness: the parts are separated by lines "@@", so that seeds
// stay readable files and libFuzzer's mutations can move text between parts.
#include <string>
#include <string_view>
#include <vector>

namespace opforge::fuzz {

/// `text` cut at each "\n@@\n"; always `count` parts (missing ones empty, the last keeps the rest).
inline std::vector<std::string_view> parts(std::string_view text, std::size_t count) {
  std::vector<std::string_view> out;
  while (out.size() + 1 < count) {
    const auto at = text.find("\n@@\n");
    if (at == std::string_view::npos) break;
    out.push_back(text.substr(0, at));
    text.remove_prefix(at + 4);
  }
  out.push_back(text);
  out.resize(count);
  return out;
}

/// One line, one element (a command line as the host wrapper hands it over, one argument a line).
inline std::vector<std::string> lines(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    out.emplace_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

}  // namespace opforge::fuzz
