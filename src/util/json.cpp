#include "util/json.h"

#include <cctype>
#include <cstdint>

#include "util/strings.h"

namespace opforge::util {

namespace {

using Json = nlohmann::json;

// Stand-ins inside the library's UTF-8 strings: U+10FF00 + byte (the bytes are 0x80..0xFF: ASCII
// is always valid), encoded F4 8F BE|BF xx; outside a string no such text occurs.
constexpr std::uint32_t kStandIn = 0x10FF00;

std::string encode(std::uint32_t cp) {
  std::string out;
  out += static_cast<char>(0xF0 | (cp >> 18));
  out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
  out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
  out += static_cast<char>(0x80 | (cp & 0x3F));
  return out;
}

std::size_t utf8_char(std::string_view s, std::size_t i, std::uint32_t& cp) {
  char32_t c = 0;
  const std::size_t n = strings::utf8_char(s, i, c);
  cp = c;
  return n;
}

/// Bytes that are not UTF-8 (and the stand-ins' own range) as stand-ins.
std::string to_stand_ins(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::uint32_t cp = 0;
    std::size_t n = utf8_char(s, i, cp);
    if (n > 0 && !(cp >= kStandIn + 0x80 && cp <= kStandIn + 0xFF)) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    // One byte at a time: a stand-in's own bytes (F4 8F BE 80) come back as those bytes.
    const std::size_t bytes = n > 0 ? n : 1;
    for (std::size_t k = 0; k < bytes; ++k) out += encode(kStandIn + static_cast<unsigned char>(s[i + k]));
    i += bytes;
  }
  return out;
}

/// Stand-ins back to their bytes.
std::string from_stand_ins(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::uint32_t cp = 0;
    std::size_t n = utf8_char(s, i, cp);
    if (n == 4 && cp >= kStandIn + 0x80 && cp <= kStandIn + 0xFF) {
      out += static_cast<char>(cp - kStandIn);
      i += 4;
      continue;
    }
    const std::size_t step = n > 0 ? n : 1;
    out.append(s.substr(i, step));
    i += step;
  }
  return out;
}

bool needs_stand_ins(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    std::uint32_t cp = 0;
    std::size_t n = utf8_char(s, i, cp);
    if (n == 0 || (cp >= kStandIn + 0x80 && cp <= kStandIn + 0xFF)) return true;
    i += n;
  }
  return false;
}

template <class F>
Json map_strings(const Json& v, F f) {
  if (v.is_string()) return f(v.get_ref<const std::string&>());
  if (v.is_array()) {
    Json out = Json::array();
    for (auto& e : v) out.push_back(map_strings(e, f));
    return out;
  }
  if (v.is_object()) {
    Json out = Json::object();
    for (auto it = v.begin(); it != v.end(); ++it) out[f(it.key())] = map_strings(it.value(), f);
    return out;
  }
  return v;
}

bool any_string(const Json& v, bool (*pred)(std::string_view)) {
  if (v.is_string()) return pred(v.get_ref<const std::string&>());
  if (v.is_array())
    for (auto& e : v)
      if (any_string(e, pred)) return true;
  if (v.is_object())
    for (auto it = v.begin(); it != v.end(); ++it)
      if (pred(it.key()) || any_string(it.value(), pred)) return true;
  return false;
}

}  // namespace

std::string json_dump(const Json& value, int indent) {
  // The common case, every string valid UTF-8, is the library's own output.
  if (!any_string(value, needs_stand_ins)) return value.dump(indent);
  const std::string text = map_strings(value, to_stand_ins).dump(indent);
  // Stand-ins (F4 8F BE|BF xx, only ever inside strings) become \udcNN escapes.
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::uint32_t cp = 0;
    std::size_t n = utf8_char(text, i, cp);
    if (n == 4 && cp >= kStandIn + 0x80 && cp <= kStandIn + 0xFF) {
      static const char* hex = "0123456789abcdef";
      const unsigned byte = cp - kStandIn;
      out += "\\udc";
      out += hex[byte >> 4];
      out += hex[byte & 15];
      i += 4;
      continue;
    }
    const std::size_t step = n > 0 ? n : 1;
    out.append(text, i, step);
    i += step;
  }
  return out;
}

namespace {

/// The deepest nesting of arrays and objects in `text`, counted outside strings, stopping once past
/// kJsonMaxDepth: a scan without recursion, before the parser builds anything.
bool nested_too_deep(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if ((c == '[' || c == '{') && ++depth > kJsonMaxDepth) return true;
    else if ((c == ']' || c == '}') && depth > 0) --depth;
  }
  return false;
}

}  // namespace

Result<Json> json_parse_checked(std::string_view text) {
  if (nested_too_deep(text))
    return bad_input("not JSON opforge reads: arrays and objects nested more than " + std::to_string(kJsonMaxDepth) +
                     " levels deep");
  // \udcNN (N: 80..ff) becomes the escape of its stand-in, \udbff\udfNN, which the library reads.
  std::string in;
  in.reserve(text.size());
  bool escapes = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      in += text[i];
      continue;
    }
    if (i + 5 < text.size() && (text[i + 1] == 'u') && (text[i + 2] == 'd' || text[i + 2] == 'D') &&
        (text[i + 3] == 'c' || text[i + 3] == 'C') &&
        std::string_view("89abcdefABCDEF").find(text[i + 4]) != std::string_view::npos &&
        std::isxdigit(static_cast<unsigned char>(text[i + 5]))) {
      in += "\\udbff\\udf";
      in += text[i + 4];
      in += text[i + 5];
      i += 5;
      escapes = true;
      continue;
    }
    // Any other escape is copied whole, so "\\udc80" (a backslash, then text) stays text.
    in += text[i];
    if (i + 1 < text.size()) in += text[++i];
  }
  Json j;
  try {
    j = Json::parse(in);
  } catch (const Json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 3: ..." without the tag.
    std::string what = e.what();
    if (auto close = what.find("] "); what.starts_with("[json.exception") && close != std::string::npos)
      what.erase(0, close + 2);
    return bad_input("not JSON: " + strings::cut(what, 200));
  }
  if (!escapes) return j;
  return map_strings(j, [](const std::string& s) { return from_stand_ins(s); });
}

Json json_parse(std::string_view text) {
  auto j = json_parse_checked(text);
  return j ? std::move(*j) : Json(Json::value_t::discarded);
}

}  // namespace opforge::util
