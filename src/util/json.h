#pragma once
/// JSON text from values that may hold bytes: Linux paths and programs' outputs are bytes, JSON is
/// UTF-8, and nlohmann::json throws (type_error.316) on the first byte that is not UTF-8.
///
/// The escape is Python's "surrogateescape" (PEP 383): a byte 0xNN that is not part of a valid
/// UTF-8 character is written as the JSON escape \udcNN, which Python's json.loads reads back and
/// os.fsencode turns into the same byte. Text that is valid UTF-8 is written unchanged, except the
/// characters U+10FF80..U+10FFFF, whose bytes are written the same way (the reader uses them as
/// stand-ins), so the escape is reversible for every byte string.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace opforge::util {

/// `value.dump(indent)` with every string (keys included) escaped as above; never throws.
std::string json_dump(const nlohmann::json& value, int indent = -1);
/// How deep arrays and objects may nest in JSON opforge reads. Walks over a parsed document
/// recurse once per level (nlohmann's copy, dump and comparison; the stand-ins' rewrite below), so
/// 50,000 levels in 100 KB crashed them: deeper text is refused before any tree is built.
/// opforge's own documents nest fewer than 10 levels.
inline constexpr int kJsonMaxDepth = 256;

/// nlohmann::json::parse without exceptions (discarded on a syntax error or on nesting deeper than
/// kJsonMaxDepth), reading \udcNN escapes back into the bytes json_dump wrote.
nlohmann::json json_parse(std::string_view text);
/// json_parse, saying why a text is refused (bad_input): "arrays and objects nested more than 256
/// levels deep", or the syntax error with its line and column.
Result<nlohmann::json> json_parse_checked(std::string_view text);

}  // namespace opforge::util
