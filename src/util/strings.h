#pragma once
#include <cstdint>
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
std::optional<std::string> did_you_mean(std::string_view word, const std::vector<std::string>& candidates);
std::string to_upper(std::string_view text);
std::string to_lower(std::string_view text);
/// Control characters (line breaks, tabs, ESC, ...) and bytes that are not UTF-8 (a path is bytes)
/// written as \xNN: a value shown in a message stays on its line, sends nothing to the terminal,
/// and is text.
std::string printable(std::string_view text);
/// printable() for whole messages: line breaks and tabs kept, every other control character (ESC
/// of a terminal sequence a file held) and each byte that is not UTF-8 written as \xNN.
std::string printable_lines(std::string_view text);
/// The length of the valid UTF-8 character at text[i] (RFC 3629: no overlong forms, no
/// surrogates, at most U+10FFFF), with its code point in `cp`; 0 when none starts there.
std::size_t utf8_char(std::string_view text, std::size_t i, char32_t& cp);
/// A value as shown in a message: printable(), whole when short, else its first `keep` bytes
/// (never half a UTF-8 character) and "… (N bytes)", so that a 10 MB value does not become a
/// 10 MB message.
std::string cut(std::string_view value, std::size_t keep = 200);

/// `word` then spaces up to `width` characters, at least one: a table's first column.
std::string column(std::string_view word, std::size_t width);

/// 1536 → "1.5 KiB" (powers of 1024).
std::string human_size(std::uint64_t bytes);

}  // namespace opforge::strings
