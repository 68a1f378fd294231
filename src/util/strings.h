#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opforge::strings {

std::vector<std::string> split(std::string_view text, char sep);
std::string_view trim(std::string_view text);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
/// Quotes a word for a POSIX shell when it needs it.
std::string shell_quote(std::string_view word);
std::string shell_join(const std::vector<std::string>& argv);
std::size_t edit_distance(std::string_view a, std::string_view b);
/// The candidate closest to `word`, when close enough to be a plausible typo.
std::optional<std::string> did_you_mean(std::string_view word,
                                        const std::vector<std::string>& candidates);
std::string to_upper(std::string_view text);
std::string to_lower(std::string_view text);

}  // namespace opforge::strings
