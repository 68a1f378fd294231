// `opforge pick INDEX [--nodes REPORT…] [--json]`: the wheel each node should install, and why
// every other wheel does not fit. Prints what rollout::pick returns.
#include <iostream>

#include "cli/command.h"
#include "rollout/pick.h"
#include "util/json.h"

namespace opforge::cli {
namespace {

/// The folder's file:// URL, where pip finds its indexes when it is not served elsewhere.
std::string file_url(const probe::FileSystem& fs, const std::string& index) {
  std::filesystem::path dist = fs.absolute(index).lexically_normal();
  if (dist.filename().empty()) dist = dist.parent_path();
  if (dist.filename() == "simple") dist = dist.parent_path();
  return "file://" + dist.string();
}

Status run_pick(const std::string& index, const std::vector<std::string>& reports, const std::string& python,
                std::string base_url, bool json) {
  auto m = probe::real_machine();
  auto nodes = OPFORGE_TRY(rollout::read_node_reports(m.fs, reports));
  // A report that cannot be read at all picks nothing: it is refused, not answered "no wheel".
  for (const auto& node : nodes)
    if (!node.unreadable.empty())
      return bad_input(node.report.string() + ": " + node.unreadable, "run `opforge doctor --json` on that node again");
  auto wheels = OPFORGE_TRY(rollout::read_index(m.fs, index));
  if (reports.empty()) nodes.push_back(rollout::this_node(m, python));
  const auto picks = rollout::pick(wheels, nodes);
  if (base_url.empty()) base_url = file_url(m.fs, index);
  if (json) std::cout << util::json_dump(rollout::pick_json(index, picks, base_url), 2) << "\n";
  else std::cout << rollout::pick_text(index, picks, base_url);
  const auto none = rollout::no_wheel(index, picks, json ? rollout::Shown::json : rollout::Shown::text);
  if (!none) return {};
  return failure(none->message, none->hint);
}

Registrar pick_command{
    {"pick", "Say which wheel of a wheelhouse each node should install, and why the others do not fit",
     [](CLI::App& app) -> Runner {
       auto index = std::make_shared<std::string>();
       auto nodes = std::make_shared<std::vector<std::string>>();
       auto python = std::make_shared<std::string>("python3");
       auto json = std::make_shared<bool>(false);
       auto base_url = std::make_shared<std::string>();
       app.add_option("index", *index, "the dist/ folder `opforge build` or `opforge index` wrote, or its simple/")
           ->required();
       app.add_option("--nodes", *nodes,
                      "`opforge doctor --json` reports (or a node check's --json report) of the nodes; without it, "
                      "the node this runs on");
       app.add_option("--python", *python, "without --nodes: the Python whose torch this node has (default python3)");
       app.add_option("--base-url", *base_url,
                      "where the folder is served (https://host/wheels), for the pip index URLs printed; default its "
                      "file:// URL");
       app.add_flag("--json", *json, "print the result as JSON (errors stay on stderr, with the exit code)");
       return [index, nodes, python, base_url, json] { return run_pick(*index, *nodes, *python, *base_url, *json); };
     }}};

}  // namespace
}  // namespace opforge::cli
