#pragma once
/// Typed reads of JSON that opforge did not just write: cache files, a probe's answer, a matrix
/// summary. A member that is missing, or holds another type than asked, reads as absent: a
/// damaged cache is a miss, never an exception (nlohmann's get<> and value() throw type_error on
/// a type they did not expect). Records, which a user hands in, have record::parse's reader,
/// which says which field is wrong instead.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace opforge::util::json_read {

using Json = nlohmann::json;

/// `object[key]`; nullptr when `object` is not an object or has no such member.
const Json* member(const Json& object, std::string_view key);
/// The member when it is an object (an array); nullptr otherwise.
const Json* object(const Json& object, std::string_view key);
const Json* array(const Json& object, std::string_view key);

/// The member's value when it is of that type.
std::optional<std::string> text(const Json& object, std::string_view key);
std::optional<bool> flag(const Json& object, std::string_view key);
std::optional<std::int64_t> integer(const Json& object, std::string_view key);
std::optional<std::uint64_t> count(const Json& object, std::string_view key);  ///< an integer >= 0
std::optional<double> number(const Json& object, std::string_view key);

/// A value itself (an array's entry, an item's value) when it is an integer >= 0.
std::optional<std::uint64_t> count(const Json& value);

/// A versioned document's format number, `object[key]`, checked and never guessed: the number
/// when it is a plain JSON integer from 1 to `newest`; otherwise bad_input naming what was found:
/// `format "2" is a string, expected the integer 1`, `format 2.0 is not an integer, expected the
/// integer 1`, `format is missing, expected the integer 1`, `format 0 is not a format opforge writes,
/// expected the integer 1`, or (its hint: a newer opforge) `format 3 is newer than this opforge
/// reads (1)`.
Result<int> format_number(const Json& object, std::string_view key, int newest);

/// text(), or `fallback` when absent.
std::string text_or(const Json& object, std::string_view key, std::string fallback = {});

/// The strings of an array member, in order; entries of another type are left out.
std::vector<std::string> texts(const Json& object, std::string_view key);
/// The same for a value that is itself the array.
std::vector<std::string> texts(const Json& array);

}  // namespace opforge::util::json_read
