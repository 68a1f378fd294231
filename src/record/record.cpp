#include "record/record.h"

#include "util/hash.h"

namespace opforge::record {

fs::path path_for(const fs::path& wheel_path) {
  return wheel_path.parent_path() / (wheel_path.filename().string() + ".opforge-record.json");
}

std::string render(const Record& record) {
  nlohmann::json j;
  j["format"] = "opforge-build-record/1";
  j["wheel"] = record.wheel;
  j["inputs"] = record.inputs;
  j["outputs"] = record.outputs;
  return j.dump(2) + "\n";
}

Result<Record> parse(const fs::path& file, std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != "opforge-build-record/1")
    return bad_input(file.string() + ": not an opforge build record",
                     "pass the .opforge-record.json written beside a wheel, or the wheel itself");
  Record r;
  r.wheel = j.value("wheel", "");
  r.inputs = j.value("inputs", nlohmann::json::object());
  if (j.contains("outputs") && j["outputs"].is_object())
    for (auto& [k, v] : j["outputs"].items())
      if (v.is_string()) r.outputs[k] = v.get<std::string>();
  return r;
}

Result<Record> load(const probe::FileSystem& fs, const fs::path& file) {
  if (fs.resolved_type(file) != probe::FileType::regular)  // a path the user typed: bad input
    return bad_input(file.string() + ": no such build record",
                     "pass the .opforge-record.json written beside a wheel in the dist folder");
  auto text = OPFORGE_TRY(fs.read_file(file));
  return parse(file, text);
}

Result<std::string> source_commit(const fs::path& file, const Record& record) {
  auto source = record.inputs.value("source", nlohmann::json::object());
  std::string commit = source.is_object() ? source.value("commit", "") : "";
  if (commit.empty())
    return bad_input(file.string() + ": the record names no source commit (that build was not made from git)",
                     "pass the record of a build made from a git source");
  return commit;
}

Status write(probe::FileSystem& fs, const fs::path& path, const Record& record) {
  return fs.write_file_atomic(path, render(record), 0644);
}

std::string sha256_hex(std::string_view bytes) { return opforge::sha256_hex(bytes); }

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
