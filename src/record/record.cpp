#include "record/record.h"
#include "util/json.h"

#include <charconv>

#include "settings/settings.h"

namespace opforge::record {
namespace {

constexpr std::string_view kFormatPrefix = "opforge-build-record/";

const char* type_name(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return "a number";
    default: return "binary data";
  }
}

/// Deepest nesting of arrays/objects, stopping as soon as `limit` is passed. The JSON library
/// copies and destroys values recursively, so a deep document must be refused before it exists.
int nesting_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') --depth;
  }
  return deepest;
}

/// Reads the typed fields, each error naming the field's path in the document.
class Reader {
 public:
  explicit Reader(const fs::path& file) : file_(file) {}

  opforge::unexpected<Error> wrong(const std::string& field, const char* expected, const nlohmann::json& got) const {
    return bad_input(file_.string() + ": field '" + field + "' must be " + expected + ", not " + type_name(got),
                     "this is not a record opforge wrote; pass the .opforge-record.json written beside a wheel");
  }
  Status string(const nlohmann::json& obj, const std::string& path, const char* key, std::string& out) const {
    auto it = obj.find(key);
    if (it == obj.end()) return {};
    if (!it->is_string()) return wrong(path + key, "a string", *it);
    out = it->get<std::string>();
    return {};
  }
  Status boolean(const nlohmann::json& obj, const std::string& path, const char* key, bool& out) const {
    auto it = obj.find(key);
    if (it == obj.end()) return {};
    if (!it->is_boolean()) return wrong(path + key, "true or false", *it);
    out = it->get<bool>();
    return {};
  }
  /// An object member that must itself be an object; nullptr when absent.
  Result<const nlohmann::json*> object(const nlohmann::json& obj, const std::string& path, const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end()) return nullptr;
    if (!it->is_object()) return wrong(path + key, "an object", *it);
    return &*it;
  }
  Status string_map(const nlohmann::json& obj, const std::string& path, const char* key,
                    std::map<std::string, std::string>& out) const {
    auto o = OPFORGE_TRY(object(obj, path, key));
    if (!o) return {};
    for (auto& [k, v] : o->items()) {
      if (!v.is_string()) return wrong(path + key + "." + k, "a string", v);
      out[k] = v.get<std::string>();
    }
    return {};
  }
  Status string_list(const nlohmann::json& obj, const std::string& path, const char* key,
                     std::vector<std::string>& out) const {
    auto it = obj.find(key);
    if (it == obj.end()) return {};
    if (!it->is_array()) return wrong(path + key, "an array of strings", *it);
    for (std::size_t i = 0; i < it->size(); ++i) {
      const auto& v = (*it)[i];
      if (!v.is_string()) return wrong(path + key + "[" + std::to_string(i) + "]", "a string", v);
      out.push_back(v.get<std::string>());
    }
    return {};
  }

 private:
  const fs::path& file_;
};

Result<int> format_version(const fs::path& file, const nlohmann::json& j) {
  auto not_ours = [&] {
    return bad_input(file.string() + ": not an opforge build record (no \"format\": \"opforge-build-record/N\")",
                     "pass the .opforge-record.json written beside a wheel, or the wheel itself");
  };
  auto it = j.find("format");
  if (it == j.end() || !it->is_string()) return not_ours();
  std::string_view f = it->get_ref<const std::string&>();
  if (!f.starts_with(kFormatPrefix)) return not_ours();
  f.remove_prefix(kFormatPrefix.size());
  int version = 0;
  auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), version);
  // The digits opforge writes, exactly: "01" or "1.0" is not read as 1.
  if (ec != std::errc() || end != f.data() + f.size() || version < 1 || std::to_string(version) != f) return not_ours();
  if (version > kFormatVersion)
    return bad_input(file.string() + ": build record format version " + std::to_string(version) +
                         " is newer than this opforge reads (version " + std::to_string(kFormatVersion) + ")",
                     "verify it with the opforge release that wrote it, or a newer one");
  return version;
}

}  // namespace

bool recorded_variable(std::string_view name) { return settings::changes_wheel(name); }

std::string recorded_variables() { return settings::wheel_variables_line(); }

fs::path path_for(const fs::path& wheel_path) {
  return wheel_path.parent_path() / (wheel_path.filename().string() + ".opforge-record.json");
}

std::string render(const Record& record) {
  nlohmann::json j;
  j["format"] = std::string(kFormatPrefix) + std::to_string(kFormatVersion);
  j["wheel"] = record.wheel;
  j["inputs"] = record.inputs;
  j["outputs"] = record.outputs;
  return util::json_dump(j, 2) + "\n";
}

Result<Record> parse(const fs::path& file, std::string_view text) {
  if (text.size() > kMaxBytes)
    return bad_input(file.string() + ": " + std::to_string(text.size()) +
                     " bytes is more than a build record can be (" + std::to_string(kMaxBytes) + ")");
  if (int depth = nesting_depth(text, kMaxDepth); depth > kMaxDepth)
    return bad_input(file.string() + ": nested deeper than a build record can be (more than " +
                     std::to_string(kMaxDepth) + " levels)");
  auto j = util::json_parse(text);
  if (j.is_discarded() || !j.is_object())
    return bad_input(file.string() + ": not an opforge build record (not a JSON object)",
                     "pass the .opforge-record.json written beside a wheel, or the wheel itself");
  Record r;
  r.format_version = OPFORGE_TRY(format_version(file, j));
  Reader read(file);
  OPFORGE_CHECK(read.string(j, "", "wheel", r.wheel));
  // Absent is allowed (--release-of needs only the source); present, it names a file beside the record.
  if (r.wheel.find('/') != std::string::npos || r.wheel == "." || r.wheel == "..")
    return bad_input(file.string() + ": field 'wheel' must name a wheel file (no folder)",
                     "pass the .opforge-record.json written beside a wheel");
  OPFORGE_CHECK(read.string_map(j, "", "outputs", r.outputs));
  const nlohmann::json* inputs = OPFORGE_TRY(read.object(j, "", "inputs"));
  if (!inputs) return r;
  r.inputs = *inputs;
  const std::string in = "inputs.";
  if (auto recipe = OPFORGE_TRY(read.object(*inputs, in, "recipe"))) {
    OPFORGE_CHECK(read.string(*recipe, in + "recipe.", "path", r.recipe_path));
    OPFORGE_CHECK(read.string(*recipe, in + "recipe.", "sha256", r.recipe_sha256));
  }
  if (auto source = OPFORGE_TRY(read.object(*inputs, in, "source"))) {
    const std::string s = in + "source.";
    OPFORGE_CHECK(read.string(*source, s, "root", r.source.root));
    OPFORGE_CHECK(read.string(*source, s, "commit", r.source.commit));
    OPFORGE_CHECK(read.boolean(*source, s, "dirty", r.source.dirty));
    OPFORGE_CHECK(read.boolean(*source, s, "release", r.source.release));
  }
  OPFORGE_CHECK(read.string_map(*inputs, in, "environment", r.environment));
  for (const auto& [name, value] : r.environment)
    if (!recorded_variable(name))
      return bad_input(file.string() + ": field 'inputs.environment." + name.substr(0, 100) +
                           "' is not a variable opforge records (" + recorded_variables() + ")",
                       "this is not a record opforge wrote; pass the .opforge-record.json written beside a wheel");
  OPFORGE_CHECK(read.string_list(*inputs, in, "command", r.command));
  OPFORGE_CHECK(read.string(*inputs, in, "fingerprint", r.fingerprint));
  return r;
}

Result<Record> load(const probe::FileSystem& fs, const fs::path& file) {
  if (fs.type_of(file) == probe::FileType::none)  // a path the user typed: bad input
    return bad_input(file.string() + ": no such build record",
                     "pass the .opforge-record.json written beside a wheel in the dist folder");
  auto text = OPFORGE_TRY(fs.read_file(file, kMaxBytes));
  return parse(file, text);
}

Result<std::string> source_commit(const fs::path& file, const Record& record) {
  if (record.source.commit.empty())
    return bad_input(file.string() + ": the record names no source commit (that build was not made from git)",
                     "pass the record of a build made from a git source");
  return record.source.commit;
}

Status write(probe::FileSystem& fs, const fs::path& path, const Record& record) {
  return fs.write_file_atomic(path, render(record), 0644);
}

std::vector<std::string> differences(const Record& expected, const Record& actual) {
  std::vector<std::string> out;
  for (auto& [name, hash] : expected.outputs) {
    auto it = actual.outputs.find(name);
    if (it == actual.outputs.end()) out.push_back(name + " (not produced by the rebuild)");
    else if (it->second != hash) out.push_back(name);
  }
  for (auto& [name, hash] : actual.outputs)
    if (!expected.outputs.count(name)) out.push_back(name + " (not in the record)");
  return out;
}

}  // namespace opforge::record
