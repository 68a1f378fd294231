// `opforge index WHEELHOUSE [DIR...]`: merges wheels built elsewhere (other CI jobs, other
// machines) into one wheelhouse with a PEP 503 index and a summary.
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "pipeline/wheelhouse.h"
#include "util/json.h"

namespace opforge::cli {
namespace {

Registrar index_command{{
    "index",
    "merge the wheels of DIRs (each checked) into WHEELHOUSE and rewrite its simple/ index and SUMMARY.md",
    [](CLI::App& app) -> Runner {
      struct Args {
        std::string out;
        std::vector<std::string> inputs;
        bool json = false;
      };
      auto args = std::make_shared<Args>();
      app.add_option("wheelhouse", args->out, "the folder served (created when missing)")->required();
      app.add_option("dirs", args->inputs, "folders of built wheels (a build's dist/); none: re-index");
      app.add_flag("--json", args->json, "print JSON");
      return [args]() -> Status {
        auto m = probe::real_machine();
        std::vector<std::filesystem::path> in(args->inputs.begin(), args->inputs.end());
        auto report = OPFORGE_TRY(pipeline::merge_wheelhouse(m, m.fs.absolute(args->out), in,
                                                             [](std::string_view l) { std::cerr << l << "\n"; }));
        if (args->json) {
          std::cout << util::json_dump(nlohmann::json{{"added", report.added}, {"unchanged", report.unchanged}}, 2)
                    << "\n";
          return {};
        }
        for (auto& w : report.added) std::cout << "added      " << w << "\n";
        for (auto& w : report.unchanged) std::cout << "unchanged  " << w << "\n";
        std::cout << "index: " << (std::filesystem::path(args->out) / "simple" / "index.html").string() << "\n";
        return {};
      };
    },
}};

}  // namespace
}  // namespace opforge::cli
