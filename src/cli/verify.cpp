// `opforge verify WHEEL|RECORD [--allow-run]`: check a wheel, or rebuild from a build record and
// compare. What a rebuild may do is pipeline/verify.h's; this prints what it would run, and runs
// it only when asked to with --allow-run.
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/progress.h"
#include "pipeline/verify.h"
#include "pipeline/wheelhouse.h"
#include "recipe/recipe.h"
#include "record/record.h"
#include "rollout/pick.h"
#include "rollout/rollout.h"
#include "util/strings.h"
#include "wheel/index.h"
#include "wheel/wheel.h"

namespace opforge::cli {
namespace fs = std::filesystem;
namespace {

Status verify_wheel(const std::string& path, bool json) {
  auto m = probe::real_machine();
  auto report = OPFORGE_TRY(wheel::verify(m.fs, path));
  if (json)
    std::cout << nlohmann::json{{"target", path}, {"kind", "wheel"}, {"ok", report.ok()}, {"problems", report.problems}}
                     .dump(2)
              << "\n";
  else if (report.ok()) std::cout << path << ": ok (every RECORD hash and size, names, tags and paths check out)\n";
  if (report.ok()) return {};
  std::string problems;
  for (auto& p : report.problems) problems += "\n  " + p;
  return failure(path + ": the wheel does not verify:" + problems);
}

std::string pad(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

/// `verify WHEEL --nodes REPORT…`: one row per node, exit 1 unless every node is ok.
Status verify_nodes(const std::string& path, const std::vector<std::string>& reports, bool json) {
  auto m = probe::real_machine();
  auto needs = OPFORGE_TRY(rollout::read_wheel_needs(m.fs, path));
  std::vector<rollout::NodeRow> rows;
  for (const auto& node : OPFORGE_TRY(rollout::read_node_reports(m.fs, reports)))
    rows.push_back(rollout::check_node(needs, node));
  std::size_t ok = 0, fails = 0;
  for (const auto& r : rows) {
    if (r.verdict == rollout::Verdict::ok) ++ok;
    if (r.verdict == rollout::Verdict::fails) ++fails;
  }
  const std::size_t unknown = rows.size() - ok - fails;
  if (json) {
    nlohmann::json j{
        {"target", path}, {"kind", "nodes"}, {"ok", ok == rows.size()}, {"nodes", nlohmann::json::array()}};
    for (const auto& r : rows) {
      nlohmann::json checks = nlohmann::json::array();
      for (const auto& c : r.checks)
        checks.push_back({{"check", c.name}, {"verdict", rollout::verdict_name(c.verdict)}, {"detail", c.detail}});
      j["nodes"].push_back({{"node", r.node},
                            {"report", r.report.string()},
                            {"verdict", rollout::verdict_name(r.verdict)},
                            {"checks", checks}});
    }
    std::cout << j.dump(2) << "\n";
  } else {
    std::size_t width = 4;
    for (const auto& r : rows) width = std::max(width, r.node.size());
    std::cout << path << " on " << rows.size() << (rows.size() == 1 ? " node" : " nodes") << ": " << ok << " ok, "
              << fails << " fail" << (unknown ? ", " + std::to_string(unknown) + " unknown" : std::string()) << "\n";
    std::cout << "  " << pad("node", width) << "  verdict  why\n";
    for (const auto& r : rows) {
      // The checks that are not ok, those with the same reason (an older report's missing part) on one line.
      std::vector<std::pair<std::string, std::string>> shown;  // names, detail
      for (const auto& c : r.checks) {
        if (c.verdict == rollout::Verdict::ok) continue;
        auto same = std::find_if(shown.begin(), shown.end(), [&](auto& s) { return s.second == c.detail; });
        if (same != shown.end()) same->first += ", " + c.name;
        else shown.emplace_back(c.name, c.detail);
      }
      std::cout << "  " << pad(r.node, width) << "  " << pad(std::string(rollout::verdict_name(r.verdict)), 7) << "  ";
      if (shown.empty()) {
        std::vector<std::string> parts;
        for (const auto& c : r.checks) parts.push_back(c.detail);
        std::cout << strings::join(parts, "; ") << "\n";
      }
      for (std::size_t i = 0; i < shown.size(); ++i)
        std::cout << (i ? "  " + std::string(width + 11, ' ') : std::string()) << shown[i].first << ": "
                  << shown[i].second << "\n";
    }
  }
  if (ok == rows.size()) return {};
  return failure(std::to_string(fails + unknown) + " of " + std::to_string(rows.size()) +
                     " nodes would not run the wheel, or cannot be told: see the rows above",
                 "an unknown row needs a fresh `opforge doctor --json` report from that node");
}

/// A wheel by its extension (any case) or, for any other name, by its zip signature.
bool is_wheel(const probe::FileSystem& fs, const std::string& path) {
  if (strings::to_lower(fs::path(path).extension().string()) == ".whl") return true;
  if (fs.resolved_type(path) != probe::FileType::regular) return false;
  auto head = fs.read_file(path, record::kMaxBytes);
  return head && head->starts_with("PK\x03\x04");
}

/// A wheelhouse: a folder named simple, or one holding simple/ (an index opforge wrote). Any other
/// folder goes on to the record reader, which refuses it by name.
bool is_wheelhouse(const probe::FileSystem& fs, const std::string& path) {
  if (fs.resolved_type(path) != probe::FileType::directory) return false;
  const fs::path p = fs::path(path).lexically_normal();
  const fs::path last = p.filename().empty() ? p.parent_path().filename() : p.filename();
  return last == "simple" || fs.resolved_type(p / "simple") == probe::FileType::directory;
}

/// `verify DIST`: the index's variants.json files, and each variant's index for plain pip, against
/// the variant wheels beside them.
Status verify_index(const std::string& path, bool json) {
  auto m = probe::real_machine();
  fs::path dist = path;
  if (dist.filename() == "simple" || (dist.filename().empty() && dist.parent_path().filename() == "simple"))
    dist = dist.filename().empty() ? dist.parent_path().parent_path() : dist.parent_path();
  auto problems = OPFORGE_TRY(wheel::check_variants_index(m.fs, dist));
  if (json) std::cout << nlohmann::json{{"target", path}, {"kind", "index"}, {"problems", problems}}.dump(2) << "\n";
  if (problems.empty()) {
    if (!json)
      std::cout << path
                << ": ok (every variant wheel's variant.json is what its version's variants.json lists, and its "
                   "variant's index for plain pip serves its files)\n";
    return {};
  }
  return failure(path + ": the index disagrees with its variant wheels:\n  " + strings::join(problems, "\n  "),
                 "rewrite the index from the wheels (`opforge index DIR DIR`) or rebuild the wheels named");
}

/// `verify WHEELHOUSE --nodes REPORT…`: the index's own checks, then per node the wheel plain pip,
/// a variant-aware installer and `opforge pick` take; exit 1 when one of them takes a wheel that
/// does not run there.
Status verify_installs(const std::string& path, const std::vector<std::string>& reports, bool json) {
  auto m = probe::real_machine();
  fs::path dist = path;
  if (dist.filename() == "simple" || (dist.filename().empty() && dist.parent_path().filename() == "simple"))
    dist = dist.filename().empty() ? dist.parent_path().parent_path() : dist.parent_path();
  auto problems = OPFORGE_TRY(wheel::check_variants_index(m.fs, dist));
  if (!problems.empty())
    return failure(path + ": the index disagrees with its variant wheels:\n  " + strings::join(problems, "\n  "),
                   "rewrite the index from the wheels (`opforge index DIR DIR`) or rebuild the wheels named");
  auto wheels = OPFORGE_TRY(rollout::read_index(m.fs, dist));
  const auto nodes = OPFORGE_TRY(rollout::read_node_reports(m.fs, reports));
  const auto all = pipeline::installs(wheels, nodes);
  if (json) std::cout << pipeline::installs_json(path, all).dump(2) << "\n";
  else std::cout << pipeline::installs_text(path, all);
  std::vector<std::string> bad;
  for (const auto& n : all)
    if (!n.ok()) bad.push_back(strings::join(n.nodes, ", ") + " (" + n.project + ")");
  if (bad.empty()) return {};
  return failure("an installer takes a wheel that does not run on: " + strings::join(bad, "; ") +
                     (json ? " (the JSON on stdout says which and why)" : " (above: which and why)"),
                 "build a plain wheel for those GPUs too: add their architecture to an arch list of [matrix] arch (the "
                 "plain wheel is built for the union), or keep those nodes off this wheelhouse");
}

/// Rebuilds from a build record into a temporary folder and compares every output's hash.
Status verify_record(const std::string& path, bool allow_run, Verbosity verbosity, bool json, const std::string& root) {
  auto m = probe::real_machine();
  auto expected = OPFORGE_TRY(record::load(m.fs, path));
  std::optional<fs::path> root_dir;
  if (!root.empty()) root_dir = root;
  auto checked = OPFORGE_TRY(pipeline::check_record(m, path, expected, root_dir));
  nlohmann::json j{
      {"target", path}, {"kind", "record"}, {"consistent", true}, {"runs", checked.description}, {"ran", allow_run}};
  if (!json) {
    std::cout << path << ": the rebuild " << (allow_run ? "runs" : "would run") << ":\n";
    for (auto& line : checked.description) std::cout << "  " << line << "\n";
    std::cout.flush();
  }
  if (!allow_run) {
    // The record, its recipe and its source agree: a success, with nothing run.
    if (json) std::cout << j.dump(2) << "\n";
    else
      std::cout << path
                << ": consistent (record, recipe and source agree); nothing was run: pass --allow-run to "
                   "rebuild what is listed above and compare its bytes\n";
    return {};
  }
  // The rebuild shows its progress as `opforge build` does (not into JSON).
  const auto r = recipe::load(m, checked.recipe);
  const bool command = r && recipe::project_build(*r);
  ProgressDisplay display(json ? Verbosity::quiet : verbosity, command, ProgressDisplay::stdout_is_terminal(m.env));
  auto rebuilt = pipeline::rebuild_and_compare(
      m, path, expected, checked, [&display](std::string_view line) { display.line(line); },
      [&display](const compile::StepEvent& e) { display.step(e); });
  display.stop();
  auto diffs = OPFORGE_TRY(std::move(rebuilt));
  if (json) {
    j["outputs"] = expected.outputs.size();
    j["identical"] = diffs.empty();
    j["differences"] = diffs;
    std::cout << j.dump(2) << "\n";
  } else if (diffs.empty()) {
    std::cout << path << ": ok (the rebuild gave identical bytes for " << expected.outputs.size() << " outputs)\n";
  }
  if (diffs.empty()) return {};
  std::string list;
  for (auto& d : diffs) list += "\n  differs: " + d;
  return failure(path + ": the rebuild differs from the record:" + list,
                 "compare the inputs in the record (toolkit, compiler, environment) with this machine's");
}

Registrar verify_command{
    {"verify", "Check a wheel (RECORD hashes, names, tags, paths) or rebuild from a build record and compare",
     [](CLI::App& app) -> Runner {
       auto target = std::make_shared<std::string>();
       auto allow_run = std::make_shared<bool>(false);
       auto quiet = std::make_shared<bool>(false);
       auto verbose = std::make_shared<bool>(false);
       auto json = std::make_shared<bool>(false);
       auto root = std::make_shared<std::string>();
       auto nodes = std::make_shared<std::vector<std::string>>();
       app.add_option("target", *target,
                      "a .whl, a .opforge-record.json, or a wheelhouse folder (its variants.json files against its "
                      "variant wheels)")
           ->required();
       app.add_option("--root", *root,
                      "a record built inside a root: where that root is now (default: the folder the record names)");
       app.add_flag("--allow-run", *allow_run,
                    "rebuild from a record: run the recipe's build (without it, verify only shows what would run)");
       auto* q = app.add_flag("-q,--quiet", *quiet, "with --allow-run: print no progress");
       app.add_flag("-v,--verbose", *verbose, "with --allow-run: also print every line the rebuild prints")
           ->excludes(q);
       app.add_option("--nodes", *nodes,
                      "with a wheel: `opforge doctor --json` reports of the nodes it is meant for; says, node by "
                      "node, whether it will run there and why not (exit 1 when any node fails or cannot be told); "
                      "with a wheelhouse: which wheel pip, a variant-aware installer and `opforge pick` take on each "
                      "node (exit 1 when one takes a wheel that does not run there)");
       app.add_flag("--json", *json, "print the result as JSON (errors stay on stderr, with the exit code)");
       return [target, allow_run, quiet, verbose, json, root, nodes] {
         auto m = probe::real_machine();
         if (!nodes->empty()) {
           if (is_wheelhouse(m.fs, *target)) return verify_installs(*target, *nodes, *json);
           if (!is_wheel(m.fs, *target))
             return Status(bad_input("--nodes checks a wheel, and " + *target + " is not one",
                                     "pass the .whl: `opforge verify WHEEL --nodes NODE.json…`"));
           return verify_nodes(*target, *nodes, *json);
         }
         const Verbosity v = *quiet ? Verbosity::quiet : *verbose ? Verbosity::verbose : Verbosity::normal;
         if (is_wheelhouse(m.fs, *target)) return verify_index(*target, *json);
         return is_wheel(m.fs, *target) ? verify_wheel(*target, *json)
                                        : verify_record(*target, *allow_run, v, *json, *root);
       };
     }}};

}  // namespace
}  // namespace opforge::cli
