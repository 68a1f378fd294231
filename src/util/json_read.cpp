#include "util/json_read.h"

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

}  // namespace opforge::util::json_read
