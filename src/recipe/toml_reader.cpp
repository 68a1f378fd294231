#include "recipe/toml_reader.h"

#include <algorithm>
#include <optional>

#include "recipe/toml_guard.h"
#include "util/strings.h"

namespace opforge::recipe {

TomlReader::TomlReader(std::filesystem::path file, std::string_view text)
    : file_(std::move(file)), lines_(strings::split(text, '\n')), text_(text) {
  for (auto& l : lines_)
    if (!l.empty() && l.back() == '\r') l.pop_back();
}

Result<toml::table> TomlReader::parse() const {
  if (auto bad = check_toml_text(text_)) {
    Location loc{file_.string(), bad->line, bad->column, {}};
    if (bad->line >= 1 && bad->line <= static_cast<int>(lines_.size())) loc.source_line = lines_[bad->line - 1];
    return opforge::unexpected(Error{ErrorKind::bad_input, "invalid TOML: " + bad->message,
                                     bad->hint.empty() ? "see https://toml.io for the syntax" : bad->hint, loc});
  }
  try {
    // TOML++ 3.3.0 asks is_non_ascii_horizontal_whitespace() about characters it meets between
    // tokens, and that function reaches __builtin_unreachable for most non-ASCII code points.
    // The guard above keeps them inside strings and comments of a well-formed file; a malformed
    // one can make the parser look at them anyway, so it is first parsed with every non-ASCII
    // byte replaced by 'x' (same lines, same structure): only a file that passes goes further.
    if (std::any_of(text_.begin(), text_.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
      std::string ascii = text_;
      for (auto& c : ascii)
        if (static_cast<unsigned char>(c) >= 0x80) c = 'x';
      (void)toml::parse(ascii, file_.string());
    }
    return toml::parse(text_, file_.string());
  } catch (const toml::parse_error& e) {
    return opforge::unexpected(Error{ErrorKind::bad_input, "invalid TOML: " + std::string(e.description()),
                                     "see https://toml.io for the syntax", at(e.source())});
  }
}

Location TomlReader::at(const toml::source_region& region) const {
  Location loc;
  loc.file = file_.string();
  loc.line = static_cast<int>(region.begin.line);
  loc.column = static_cast<int>(region.begin.column);
  if (loc.line >= 1 && loc.line <= static_cast<int>(lines_.size())) loc.source_line = lines_[loc.line - 1];
  return loc;
}

Location TomlReader::at(const toml::node& node) const { return at(node.source()); }

Location TomlReader::inside_string(const toml::node& node, int column_in_string) const {
  Location loc = at(node);
  // The region starts at the opening quote; the string's first character is one column further.
  if (column_in_string > 0) loc.column += column_in_string;
  return loc;
}

Error TomlReader::error_at(const toml::node& node, std::string message, std::string hint) const {
  return Error{ErrorKind::bad_input, std::move(message), std::move(hint), at(node)};
}

std::string type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time: return "a date/time";
    default: return "nothing";
  }
}

Status TomlReader::check_keys(const toml::table& table, const std::vector<std::string>& allowed,
                              std::string_view where) const {
  for (auto&& [key, node] : table) {
    std::string name(key.str());
    if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) continue;
    std::string msg = "unknown key '" + strings::cut(name) + "' in " + std::string(where);
    if (auto guess = strings::did_you_mean(name, allowed)) msg += "; did you mean '" + *guess + "'?";
    Location loc = at(key.source());
    return opforge::unexpected(Error{ErrorKind::bad_input, msg, "valid keys: " + strings::join(allowed, ", "), loc});
  }
  return {};
}

namespace {

/// A NUL ("\u0000" in TOML) would cut a path or an argument where the operating system reads it.
std::optional<Error> nul_in(const TomlReader& r, const toml::node& node, std::string_view key,
                            const std::string& value) {
  auto pos = value.find('\0');
  if (pos == std::string::npos) return std::nullopt;
  return r.error_at(
      node,
      std::string(key) + " contains a NUL character (\\u0000) after '" + strings::cut(value.substr(0, pos), 60) + "'",
      "remove it");
}

}  // namespace

Result<std::string> TomlReader::string(const toml::node& node, std::string_view key) const {
  if (auto* s = node.as_string()) {
    if (auto e = nul_in(*this, node, key, s->get())) return opforge::unexpected(*e);
    return s->get();
  }
  return opforge::unexpected(error_at(node, std::string(key) + " must be a string, not " + type_name(node)));
}

Result<bool> TomlReader::boolean(const toml::node& node, std::string_view key) const {
  if (auto* b = node.as_boolean()) return b->get();
  return opforge::unexpected(error_at(node, std::string(key) + " must be true or false, not " + type_name(node)));
}

Result<std::vector<std::string>> TomlReader::string_array(const toml::node& node, std::string_view key) const {
  auto* arr = node.as_array();
  if (!arr)
    return opforge::unexpected(
        error_at(node, std::string(key) + " must be an array of strings, not " + type_name(node)));
  std::vector<std::string> out;
  for (auto& item : *arr) {
    auto* s = item.as_string();
    if (!s)
      return opforge::unexpected(
          error_at(item, std::string(key) + " must be an array of strings; this item is " + type_name(item)));
    if (auto e = nul_in(*this, item, key, s->get())) return opforge::unexpected(*e);
    out.push_back(s->get());
  }
  return out;
}

Result<const toml::table*> TomlReader::table(const toml::node& node, std::string_view key) const {
  if (auto* t = node.as_table()) return t;
  return opforge::unexpected(error_at(node, "[" + std::string(key) + "] must be a table, not " + type_name(node)));
}

}  // namespace opforge::recipe
