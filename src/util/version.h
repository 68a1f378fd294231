#pragma once
#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace opforge {

/// A dotted version such as CUDA 12.6 or gcc 11.3.0 (missing parts are 0).
struct Version {
  int major = 0;
  int minor = 0;
  int patch = 0;
  auto operator<=>(const Version&) const = default;
  std::string str(int parts = 2) const;
};

/// Parses "12", "12.6", "12.6.20241114" (extra parts ignored); nullopt when not a version.
std::optional<Version> parse_version(std::string_view text);

}  // namespace opforge
