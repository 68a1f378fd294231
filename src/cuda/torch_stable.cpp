#include "cuda/torch_stable.h"

#include <algorithm>
#include <cctype>

#include "util/numbers.h"
#include "util/strings.h"

namespace opforge::cuda {
namespace {

/// "TORCH_VERSION_2_12_0" anywhere in `line` → (2, 12).
std::optional<Release> release_named(std::string_view line) {
  auto at = line.find("TORCH_VERSION_");
  if (at == std::string_view::npos) return std::nullopt;
  auto parts = strings::split(line.substr(at + 14, 16), '_');
  if (parts.size() < 2) return std::nullopt;
  auto major = numbers::parse_int<int>(parts[0]);
  std::string minor_digits;
  for (char c : parts[1])
    if (c >= '0' && c <= '9') minor_digits += c;
    else break;
  auto minor = numbers::parse_int<int>(minor_digits);
  if (!major || !minor) return std::nullopt;
  return Release{*major, *minor};
}

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

void parse_stable_header(std::string_view text, StableAbi& abi) {
  // One entry per open #if: the release its condition requires ({0, 0}: none).
  std::vector<Release> open;
  std::string pending;  // text after an AOTI_TORCH_EXPORT whose name ('(' ) has not come yet
  Release pending_release{0, 0};
  bool in_export = false;
  for (const auto& raw : strings::split(text, '\n')) {
    std::string_view line = strings::trim(raw);
    if (line.starts_with("#")) {
      std::string_view d = strings::trim(line.substr(1));
      if (d.starts_with("define TORCH_VERSION_")) {
        if (auto r = release_named(d); r && (!abi.oldest || *r < *abi.oldest)) abi.oldest = r;
      } else if (d.starts_with("if")) {  // #if, #ifdef, #ifndef
        const bool guard =
            d.find("TORCH_FEATURE_VERSION") != std::string_view::npos && d.find(">=") != std::string_view::npos;
        open.push_back(guard ? release_named(d).value_or(Release{0, 0}) : Release{0, 0});
      } else if (d.starts_with("elif") || d.starts_with("else")) {
        // The other branch of a version guard is older code: no release of its own.
        if (!open.empty()) open.back() = Release{0, 0};
      } else if (d.starts_with("endif")) {
        if (!open.empty()) open.pop_back();
      }
      continue;
    }
    if (auto at = line.find("AOTI_TORCH_EXPORT"); at != std::string_view::npos) {
      in_export = true;
      pending = std::string(line.substr(at + 17));
      pending_release = Release{0, 0};
      for (const auto& r : open) pending_release = std::max(pending_release, r);
    } else if (in_export) {
      pending += " " + std::string(line);
    }
    if (!in_export) continue;
    auto paren = pending.find('(');
    if (paren == std::string::npos) {
      if (pending.find(';') != std::string::npos) in_export = false;  // a variable, not a function
      continue;
    }
    std::size_t end = paren;
    while (end > 0 && pending[end - 1] == ' ') --end;
    std::size_t begin = end;
    while (begin > 0 && identifier_char(pending[begin - 1])) --begin;
    if (begin < end) {
      std::string name = pending.substr(begin, end - begin);
      auto [it, added] = abi.introduced.emplace(name, pending_release);
      if (!added) it->second = std::min(it->second, pending_release);
    }
    in_export = false;
  }
}

StableAbi read_stable_abi(const probe::FileSystem& fs, const std::filesystem::path& torch_dir) {
  StableAbi abi;
  const auto csrc = torch_dir / "include" / "torch" / "csrc";
  std::vector<std::filesystem::path> files = {csrc / "stable" / "version.h", csrc / "stable" / "c" / "shim.h"};
  for (const auto& dir : {csrc / "inductor" / "aoti_torch" / "c", csrc / "inductor" / "aoti_torch" / "generated"})
    if (auto entries = fs.list_directory(dir)) {
      std::vector<std::string> names;
      for (const auto& n : *entries)
        if (n.ends_with(".h") && (n.starts_with("shim") || n.starts_with("c_shim"))) names.push_back(n);
      std::sort(names.begin(), names.end());
      for (const auto& n : names) files.push_back(dir / n);
    }
  for (const auto& f : files)
    if (auto text = fs.read_file(f, 16ull << 20)) parse_stable_header(*text, abi);
  return abi;
}

StableFloor stable_floor(const StableAbi& abi, const std::vector<std::string>& symbols) {
  StableFloor out;
  Release floor{0, 0};
  for (const auto& s : symbols) {
    auto it = abi.introduced.find(s);
    if (it == abi.introduced.end()) {
      if (out.missing.empty()) out.missing = s;
      continue;
    }
    const Release r = it->second == Release{0, 0} && abi.oldest ? *abi.oldest : it->second;
    if (out.decided_by.empty() || r > floor) {
      out.decided_by = s;
      floor = r;
    }
  }
  if (out.missing.empty() && floor != Release{0, 0}) out.release = floor;
  return out;
}

}  // namespace opforge::cuda
