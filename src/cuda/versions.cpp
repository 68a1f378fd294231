#include "cuda/versions.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "util/json.h"
#include "util/numbers.h"
#include "util/scan.h"
#include "util/strings.h"

namespace opforge::cuda {

std::optional<Version> major_minor(std::optional<Version> v) {
  if (v) v->patch = 0;
  return v;
}

namespace {

/// The first `<key>\s+<digits>.<digits>` in `text`: the version after `key`.
std::optional<std::string> version_after(std::string_view text, std::string_view key) {
  for (auto at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
    scan::Cursor c{text.substr(at + key.size())};
    if (!c.spaces()) continue;
    auto start = c.rest.data();
    if (c.digits().empty() || !c.literal(".") || c.digits().empty()) continue;
    return std::string(start, c.rest.data());
  }
  return std::nullopt;
}

}  // namespace

std::optional<Version> parse_version_json(std::string_view text) {
  auto j = util::json_parse(text);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto it = j.find("cuda");
  if (it == j.end() || !it->is_object()) return std::nullopt;
  auto v = it->find("version");
  if (v == it->end() || !v->is_string()) return std::nullopt;
  return major_minor(parse_version(v->get<std::string>()));
}

std::optional<Version> parse_version_txt(std::string_view text) {
  auto s = version_after(text, "CUDA Version");
  return s ? major_minor(parse_version(*s)) : std::nullopt;
}

std::optional<Version> parse_nvcc_version(std::string_view text) {
  auto s = version_after(text, "release");
  return s ? major_minor(parse_version(*s)) : std::nullopt;
}

std::optional<Version> parse_cuda_h(std::string_view text) {
  // The first `#define\s+CUDA_VERSION\s+([0-9]+)`.
  std::optional<std::string_view> s;
  for (auto at = text.find("#define"); !s && at != std::string_view::npos; at = text.find("#define", at + 1)) {
    scan::Cursor c{text.substr(at + 7)};
    if (!c.spaces() || !c.literal("CUDA_VERSION") || !c.spaces()) continue;
    if (auto d = c.digits(); !d.empty()) s = d;
  }
  if (!s) return std::nullopt;
  // CUDA_VERSION is major * 1000 + minor * 10 (13000 is 13.0); anything past 6 digits is junk.
  auto n = numbers::parse_int<int>(*s);
  if (!n || *n > 999999) return std::nullopt;
  return Version{*n / 1000, (*n % 1000) / 10, 0};
}

std::optional<fs::path> parse_nvcc_wrapper(std::string_view script) {
  bool line_start = true;
  for (std::size_t at = 0; at < script.size(); ++at) {
    char ch = script[at];
    if (scan::is_space(ch)) {
      line_start = line_start || ch == '\n';
      continue;
    }
    if (!line_start) continue;
    line_start = false;
    scan::Cursor c{script.substr(at)};
    if (!c.literal("exec") || !c.spaces()) continue;
    if (!c.done() && scan::is_quote(c.rest.front())) c.rest.remove_prefix(1);
    auto word = c.run([](char w) { return !scan::is_quote(w) && !scan::is_space(w); });
    // The path is the word up to its last "/nvcc" (so `.../nvcc;` and `.../nvcc)` read too).
    auto end = word.rfind("/nvcc");
    if (end == std::string_view::npos || end == 0) continue;
    return fs::path(word.substr(0, end + 5));
  }
  return std::nullopt;
}

NvccProfile parse_nvcc_profile(std::string_view text) {
  NvccProfile out;
  for (auto& line : strings::split(text, '\n')) {
    scan::Cursor c{line};
    c.spaces();
    std::vector<fs::path>* into = c.literal("INCLUDES")    ? &out.include_dirs
                                  : c.literal("LIBRARIES") ? &out.library_dirs
                                                           : nullptr;
    if (!into) continue;
    const std::string_view flag = into == &out.include_dirs ? "-I" : "-L";
    // The words after the operator (=, +=, =+, ?=): `-L/usr/lib/x86_64-linux-gnu`, quoted or not.
    std::string words(c.rest);
    std::replace(words.begin(), words.end(), '\t', ' ');
    for (auto& word : strings::split(words, ' ')) {
      std::string_view w = strings::trim(word);
      while (!w.empty() && scan::is_quote(w.front())) w.remove_prefix(1);
      while (!w.empty() && scan::is_quote(w.back())) w.remove_suffix(1);
      if (!w.starts_with(flag)) continue;
      w.remove_prefix(2);
      if (w.starts_with("/") && w.find("$(") == std::string_view::npos) into->push_back(fs::path(w));
    }
  }
  return out;
}

}  // namespace opforge::cuda
