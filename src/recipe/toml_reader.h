#pragma once
/// Shared helpers for reading validated TOML documents (recipes and op manifests): every error
/// points at file:line:col with the offending line, and unknown keys get "did you mean".
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "util/error.h"

namespace opforge::recipe {

class TomlReader {
 public:
  TomlReader(std::filesystem::path file, std::string_view text);

  /// Parses the text; a syntax error becomes bad_input at the parser's position.
  Result<toml::table> parse() const;

  Location at(const toml::node& node) const;
  Location at(const toml::source_region& region) const;
  /// Location of a position inside a string value (1-based column within the string's text).
  Location inside_string(const toml::node& node, int column_in_string) const;

  Error error_at(const toml::node& node, std::string message, std::string hint = {}) const;

  /// Rejects keys of `table` not in `allowed` ("did you mean").
  Status check_keys(const toml::table& table, const std::vector<std::string>& allowed, std::string_view where) const;

  Result<std::string> string(const toml::node& node, std::string_view key) const;
  Result<bool> boolean(const toml::node& node, std::string_view key) const;
  Result<std::vector<std::string>> string_array(const toml::node& node, std::string_view key) const;
  Result<const toml::table*> table(const toml::node& node, std::string_view key) const;

  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path file_;
  std::vector<std::string> lines_;
  std::string text_;
};

/// "string", "integer", "array", ... for error messages.
std::string type_name(const toml::node& node);

}  // namespace opforge::recipe
