#include "compile/command/cmake_log.h"

#include "util/strings.h"

namespace opforge::compile {

namespace {

/// The text between `open` + the `quote` after it and the next `quote`: the version in
/// `required is at least "14.0"`.
std::string quoted_after(std::string_view text, std::string_view open) {
  const auto at = text.find(open);
  if (at == std::string_view::npos) return "";
  const auto begin = text.find('"', at + open.size());
  if (begin == std::string_view::npos) return "";
  const auto end = text.find('"', begin + 1);
  if (end == std::string_view::npos) return "";
  return std::string(text.substr(begin + 1, end - begin - 1));
}

}  // namespace

std::optional<CmakeError> first_cmake_error(std::string_view log) {
  auto at = log.find("CMake Error");
  // Only at the start of a line: a project's own message may quote the words.
  while (at != std::string_view::npos && at > 0 && log[at - 1] != '\n') at = log.find("CMake Error", at + 1);
  if (at == std::string_view::npos) return std::nullopt;
  // The error's line, then every indented or empty line after it, up to CMake's "Call Stack" or
  // the next unindented line.
  CmakeError out;
  std::size_t pos = at;
  bool first = true;
  while (pos < log.size()) {
    const auto end = log.find('\n', pos);
    const std::string_view line = log.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (!first && !line.empty() && line.front() != ' ') break;
    if (!strings::trim(line).empty()) out.text += std::string(line) + "\n";
    first = false;
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  while (!out.text.empty() && out.text.back() == '\n') out.text.pop_back();
  // FindCUDAToolkit: `Could NOT find CUDAToolkit: Found unsuitable version "13.0.88", but required
  // is at least "14.0"`. CMake wraps the message, so look across its lines.
  std::string flat;
  for (char c : out.text) flat += (c == '\n') ? ' ' : c;
  std::string collapsed;
  for (char c : flat)
    if (c != ' ' || collapsed.empty() || collapsed.back() != ' ') collapsed += c;
  if (collapsed.find("CUDAToolkit") != std::string::npos || collapsed.find("CUDA") != std::string::npos)
    out.wants_cuda = quoted_after(collapsed, "required is at least");
  return out;
}

}  // namespace opforge::compile
