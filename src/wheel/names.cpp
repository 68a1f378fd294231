#include <cctype>

#include "util/pep440.h"
#include "wheel/wheel.h"

namespace opforge::wheel {

std::string normalize_name(std::string_view name) {
  std::string out;
  bool in_run = false;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (!in_run) out += '_';
      in_run = true;
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      in_run = false;
    }
  }
  return out;
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

}  // namespace opforge::wheel
