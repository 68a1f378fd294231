#include <cctype>

#include "util/strings.h"
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

// The public part in the canonical form opforge writes (PEP 440 normalised spelling only).
Status validate_public(std::string_view v, std::string_view whole) {
  auto bad = [&](std::string why) {
    return bad_input("invalid version '" + std::string(whole) + "': " + why, kVersionHint);
  };
  if (v.empty()) return bad("the public part (before '+') is empty");
  std::size_t i = 0;
  auto read_number = [&]() -> bool {
    std::size_t start = i;
    while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) ++i;
    return i > start;
  };
  // Release: N(.N)*
  if (!read_number()) return bad("it must start with a number");
  while (i < v.size() && v[i] == '.' && i + 1 < v.size() && std::isdigit(static_cast<unsigned char>(v[i + 1]))) {
    ++i;
    read_number();
  }
  auto take = [&](std::string_view word) {
    if (v.substr(i, word.size()) == word) {
      i += word.size();
      return true;
    }
    return false;
  };
  if (take("a") || take("b") || take("rc")) {
    if (!read_number()) return bad("a pre-release marker needs a number (a1, b2, rc1)");
  }
  if (take(".post")) {
    if (!read_number()) return bad("'.post' needs a number");
  }
  if (take(".dev")) {
    if (!read_number()) return bad("'.dev' needs a number");
  }
  if (i != v.size()) return bad("unexpected '" + std::string(v.substr(i)) + "'");
  return {};
}

}  // namespace

Status validate_version(std::string_view version) {
  auto plus = version.find('+');
  OPFORGE_CHECK(validate_public(version.substr(0, plus), version));
  if (plus == std::string_view::npos) return {};
  std::string_view local = version.substr(plus + 1);
  auto bad = [&](std::string why) {
    return bad_input("invalid version '" + std::string(version) + "': local label '" + std::string(local) + "' " + why,
                     kVersionHint);
  };
  if (local.empty()) return bad("is empty");
  for (const auto& seg : strings::split(local, '.')) {
    if (seg.empty()) return bad("has an empty segment");
    for (char c : seg) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
      if (!ok) return bad("may only hold a-z, 0-9 and '.', not '" + std::string(1, c) + "'");
    }
  }
  return {};
}

}  // namespace opforge::wheel
