// `opforge verify WHEEL|RECORD [--allow-run]`: check a wheel, or rebuild from a build record and
// compare. What a rebuild may do is pipeline/verify.h's; this prints what it would run, and runs
// it only when asked to with --allow-run.
#include <iostream>

#include "cli/command.h"
#include "pipeline/verify.h"
#include "record/record.h"
#include "util/strings.h"
#include "wheel/wheel.h"

namespace opforge::cli {
namespace fs = std::filesystem;
namespace {

Status verify_wheel(const std::string& path) {
  auto m = probe::real_machine();
  auto report = OPFORGE_TRY(wheel::verify(m.fs, path));
  if (report.ok()) {
    std::cout << path << ": ok (every RECORD hash and size, names, tags and paths check out)\n";
    return {};
  }
  std::string problems;
  for (auto& p : report.problems) problems += "\n  " + p;
  return failure(path + ": the wheel does not verify:" + problems);
}

/// A wheel by its extension (any case) or, for any other name, by its zip signature.
bool is_wheel(const probe::FileSystem& fs, const std::string& path) {
  if (strings::to_lower(fs::path(path).extension().string()) == ".whl") return true;
  if (fs.resolved_type(path) != probe::FileType::regular) return false;
  auto head = fs.read_regular_file(path, record::kMaxBytes);
  return head && head->starts_with("PK\x03\x04");
}

/// Rebuilds from a build record into a temporary folder and compares every output's hash.
Status verify_record(const std::string& path, bool allow_run) {
  auto m = probe::real_machine();
  auto expected = OPFORGE_TRY(record::load(m.fs, path));
  auto checked = OPFORGE_TRY(pipeline::check_record(m, path, expected));
  std::cout << path << ": the rebuild " << (allow_run ? "runs" : "would run") << ":\n";
  for (auto& line : checked.description) std::cout << "  " << line << "\n";
  std::cout.flush();
  if (!allow_run)
    return bad_input(path + ": nothing was run: verifying a record rebuilds it, running what is listed above",
                     "read the list, then pass --allow-run to rebuild and compare");
  auto diffs = OPFORGE_TRY(pipeline::rebuild_and_compare(m, path, expected, checked));
  if (diffs.empty()) {
    std::cout << path << ": ok (the rebuild gave identical bytes for " << expected.outputs.size() << " outputs)\n";
    return {};
  }
  std::string list;
  for (auto& d : diffs) list += "\n  differs: " + d;
  return failure(path + ": the rebuild differs from the record:" + list,
                 "compare the inputs in the record (toolkit, compiler, environment) with this machine's");
}

Registrar reg{{"verify", "Check a wheel (RECORD hashes, names, tags, paths) or rebuild from a build record and compare",
               [](CLI::App& app) -> Runner {
                 auto target = std::make_shared<std::string>();
                 auto allow_run = std::make_shared<bool>(false);
                 app.add_option("target", *target, "a .whl, or a .opforge-record.json")->required();
                 app.add_flag(
                     "--allow-run", *allow_run,
                     "rebuild from a record: run the recipe's build (without it, verify only shows what would run)");
                 return [target, allow_run] {
                   auto m = probe::real_machine();
                   return is_wheel(m.fs, *target) ? verify_wheel(*target) : verify_record(*target, *allow_run);
                 };
               }}};

}  // namespace
}  // namespace opforge::cli
