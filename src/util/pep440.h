#pragma once
/// PEP 440 versions in the normalised spelling opforge writes into wheel names: the one grammar
/// that the recipe, the plan (local labels) and the wheel writer check against.
///   public = N(.N)* [(a|b|rc)N] [.postN] [.devN]
///   local  = [a-z0-9]+ (. [a-z0-9]+)*
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opforge::pep440 {

/// Why `v` is not a public version ("it must start with a number", ...), nullopt when it is one.
std::optional<std::string> public_version_error(std::string_view v);
/// Why `label` is not a local version label ("has an empty segment", ...), nullopt when it is one.
std::optional<std::string> local_label_error(std::string_view label);

inline bool is_public_version(std::string_view v) { return !public_version_error(v); }
inline bool is_local_label(std::string_view label) { return !local_label_error(label); }

}  // namespace opforge::pep440

namespace opforge::pep440 {

/// The release numbers of a version: "2.15.0+cu132" → {2, 15, 0}, "2.16.0.dev20261101" → {2, 16,
/// 0} (pre-, post-, dev-release and local parts are dropped: enough for the specifiers opforge
/// writes and reads, which name releases). nullopt when it does not start with N(.N)*.
std::optional<std::vector<int>> release_of(std::string_view version);

/// Whether `version` satisfies a comma-separated specifier set (PEP 440 clauses on releases:
/// "==2.15.*", "==2.15.0", ">=2.12", "<3", "!=2.13.*", "~=2.1"; a version's missing numbers
/// count as 0). nullopt when a clause or the version cannot be read.
std::optional<bool> satisfies(std::string_view version, std::string_view specifiers);

/// How two versions in the spelling above order as PEP 440 says (what pip takes as newer):
/// release numbers, then `.devN` < `aN` < `bN` < `rcN` < the release < `.postN`, then the local
/// label (none first; segment by segment, numbers above words). <0, 0 or >0; nullopt when either
/// is not such a version.
std::optional<int> compare(std::string_view a, std::string_view b);

}  // namespace opforge::pep440
