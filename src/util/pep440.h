#pragma once
/// PEP 440 versions in the normalised spelling opforge writes into wheel names: the one grammar
/// that the recipe, the plan (local labels) and the wheel writer check against.
///   public = N(.N)* [(a|b|rc)N] [.postN] [.devN]
///   local  = [a-z0-9]+ (. [a-z0-9]+)*
#include <optional>
#include <string>
#include <string_view>

namespace opforge::pep440 {

/// Why `v` is not a public version ("it must start with a number", ...), nullopt when it is one.
std::optional<std::string> public_version_error(std::string_view v);
/// Why `label` is not a local version label ("has an empty segment", ...), nullopt when it is one.
std::optional<std::string> local_label_error(std::string_view label);

inline bool is_public_version(std::string_view v) { return !public_version_error(v); }
inline bool is_local_label(std::string_view label) { return !local_label_error(label); }

}  // namespace opforge::pep440
