#include "util/json_read.h"

#include "util/json.h"
#include "util/strings.h"

namespace opforge::util::json_read {

const Json* member(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const Json* object(const Json& o, std::string_view key) {
  const Json* m = member(o, key);
  return m && m->is_object() ? m : nullptr;
}

const Json* array(const Json& o, std::string_view key) {
  const Json* m = member(o, key);
  return m && m->is_array() ? m : nullptr;
}

std::optional<std::string> text(const Json& o, std::string_view key) {
  const Json* m = member(o, key);
  if (!m || !m->is_string()) return std::nullopt;
  return m->get_ref<const std::string&>();
}

std::optional<bool> flag(const Json& o, std::string_view key) {
  const Json* m = member(o, key);
  if (!m || !m->is_boolean()) return std::nullopt;
  return m->get<bool>();
}

std::optional<std::int64_t> integer(const Json& o, std::string_view key) {
  const Json* m = member(o, key);
  if (!m) return std::nullopt;
  if (m->is_number_unsigned()) {
    const auto u = m->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (!m->is_number_integer()) return std::nullopt;
  return m->get<std::int64_t>();
}

std::optional<std::uint64_t> count(const Json& value) {
  if (!value.is_number_unsigned()) return std::nullopt;  // nlohmann keeps a read -1 signed
  return value.get<std::uint64_t>();
}

std::optional<std::uint64_t> count(const Json& o, std::string_view key) {
  const Json* m = member(o, key);
  return m ? count(*m) : std::nullopt;
}

std::optional<double> number(const Json& o, std::string_view key) {
  const Json* m = member(o, key);
  if (!m || !m->is_number()) return std::nullopt;
  return m->get<double>();
}

std::string text_or(const Json& o, std::string_view key, std::string fallback) {
  auto t = text(o, key);
  return t ? *t : std::move(fallback);
}

std::vector<std::string> texts(const Json& a) {
  std::vector<std::string> out;
  if (!a.is_array()) return out;
  for (const auto& e : a)
    if (e.is_string()) out.push_back(e.get_ref<const std::string&>());
  return out;
}

std::vector<std::string> texts(const Json& o, std::string_view key) {
  const Json* a = array(o, key);
  return a ? texts(*a) : std::vector<std::string>{};
}

Result<int> format_number(const Json& o, std::string_view key, int newest) {
  const std::string name(key);
  const std::string expected = newest == 1 ? "the integer 1" : "an integer from 1 to " + std::to_string(newest);
  const Json* m = member(o, key);
  if (!m) return bad_input(name + " is missing, expected " + expected);
  // What was found, as the document has it (a string keeps its quotes), cut short.
  const std::string found = name + " " + strings::cut(json_dump(*m), 40);
  if (m->is_string()) return bad_input(found + " is a string, expected " + expected);
  if (m->is_number_float()) return bad_input(found + " is not an integer, expected " + expected);
  if (!m->is_number_integer())
    return bad_input(found +
                     (m->is_null()      ? " is null"
                      : m->is_boolean() ? " is a boolean"
                      : m->is_array()   ? " is an array"
                                        : " is an object") +
                     ", expected " + expected);
  // 2^63 and above are unsigned in nlohmann: newer than any format, never a wrapped negative.
  const bool above = m->is_number_unsigned() ? m->get<std::uint64_t>() > static_cast<std::uint64_t>(newest)
                                             : m->get<std::int64_t>() > newest;
  if (above)
    return bad_input(found + " is newer than this opforge reads (" + std::to_string(newest) + ")",
                     "read it with the opforge that wrote it, or a newer one");
  const auto v = m->get<std::int64_t>();
  if (v < 1) return bad_input(found + " is not a format opforge writes, expected " + expected);
  return static_cast<int>(v);
}

}  // namespace opforge::util::json_read
