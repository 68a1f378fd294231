#pragma once
#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

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

/// One clause of a version spec: `>=12.1`, `<13`, `!=12.2`, `12.4` (same as `==12.4`).
struct VersionClause {
  std::string op = "==";  ///< ">=", "<=", ">", "<", "==" or "!="
  Version v;
  int parts = 2;  ///< 1 for "13" (compares the major only), 2 for "13.0"
  bool accepts(const Version& x) const;
};

/// The grammar of `[cuda] version` (recipe/parse.cpp checks it, cuda/resolve.cpp applies it):
///   spec   = "auto" | "torch" | clause *("," clause)
///   clause = [op] number ["." number]       op = ">=" | "<=" | ">" | "<" | "==" | "!="
/// with spaces allowed around every part and numbers of at most 3 digits (the toolkits compare
/// on major.minor, so a patch number would be silently ignored and is refused instead).
/// For "auto" and "torch" the result is empty. On error: bad_input whose where.column is the
/// 1-based column inside `spec`.
Result<std::vector<VersionClause>> parse_version_spec(std::string_view spec);

}  // namespace opforge
