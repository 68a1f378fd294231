#include <algorithm>
#include <cctype>

#include "util/pep440.h"
#include "util/strings.h"
#include "wheel/internal.h"
#include "wheel/wheel.h"

namespace opforge::wheel {

namespace {

/// Lower case, each run of '-', '_' and '.' one `sep`: PEP 503 ('-') and PEP 427 ('_') alike.
std::string fold_name(std::string_view name, char sep) {
  std::string out;
  bool in_run = false;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (!in_run) out += sep;
      in_run = true;
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      in_run = false;
    }
  }
  return out;
}

}  // namespace

std::string normalize_name(std::string_view name) { return fold_name(name, '_'); }

std::string project_name(std::string_view name) { return fold_name(name, '-'); }

std::optional<WheelFileName> parse_wheel_filename(std::string_view filename) {
  if (!filename.ends_with(".whl") || filename.find('/') != std::string_view::npos) return std::nullopt;
  auto parts = strings::split(filename.substr(0, filename.size() - 4), '-');
  if (parts.size() < 5 || parts.size() > 7) return std::nullopt;
  for (const auto& p : parts)
    if (p.empty()) return std::nullopt;
  auto digit = [](const std::string& p) { return std::isdigit(static_cast<unsigned char>(p[0])) != 0; };
  const bool build = parts.size() == 7 || (parts.size() == 6 && digit(parts[2]));
  const bool label = parts.size() == 7 || (parts.size() == 6 && !digit(parts[2]));
  const std::size_t py = build ? 3 : 2;
  if (digit(parts[py])) return std::nullopt;
  if (label && (!std::all_of(parts.back().begin(), parts.back().end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
      })))
    return std::nullopt;
  return WheelFileName{parts[0],      parts[1],      build ? parts[2] : "",    parts[py],
                       parts[py + 1], parts[py + 2], label ? parts.back() : ""};
}

namespace {

constexpr const char* kVersionHint =
    "a wheel version is N(.N)* with optional aN/bN/rcN, .postN, .devN, then an optional local "
    "label +[a-z0-9]+(.[a-z0-9]+)*, e.g. 0.1.0+cu13.g8cd046f";

}  // namespace

Status validate_version(std::string_view version) {
  auto plus = version.find('+');
  if (auto why = pep440::public_version_error(version.substr(0, plus)))
    return bad_input("invalid version '" + std::string(version) + "': " + *why, kVersionHint);
  if (plus == std::string_view::npos) return {};
  std::string_view local = version.substr(plus + 1);
  if (auto why = pep440::local_label_error(local))
    return bad_input("invalid version '" + std::string(version) + "': local label '" + std::string(local) + "' " + *why,
                     kVersionHint);
  return {};
}

constexpr std::string_view kDistInfo = ".dist-info";

std::string dist_info_dir(std::string_view dist) { return std::string(dist) + std::string(kDistInfo); }

std::string_view dist_info_of(std::string_view path) {
  auto slash = path.find('/');
  if (slash == std::string_view::npos || !path.substr(0, slash).ends_with(kDistInfo)) return {};
  return path.substr(0, slash);
}

}  // namespace opforge::wheel
