// `opforge doctor`: prints doctor::examine's report as text or JSON.
#include <iostream>

#include "cache/cache.h"
#include "cli/command.h"
#include "compile/compiler_cache/sccache.h"
#include "cuda/provision.h"
#include "doctor/render.h"
#include "rollout/pick.h"
#include "settings/settings.h"
#include "util/json.h"

namespace opforge::cli {
namespace {

Registrar doctor_command{{
    "doctor",
    "report toolkits, torch's CUDA, compilers, GPUs, libraries and which ops can be built",
    [](CLI::App& app) -> Runner {
      struct Args {
        bool json = false;
        std::string python = "python3";
        std::string recipe;
        bool variant_properties = false;
      };
      auto args = std::make_shared<Args>();
      app.add_flag("--json", args->json, "print JSON");
      app.add_option("--python", args->python, "the Python whose torch is read (default python3)");
      app.add_option("--recipe", args->recipe, "decide ops for this recipe (default: the bundled one)");
      app.add_flag("--variant-properties", args->variant_properties,
                   "print only the variant properties this node supports, as static providers of a "
                   "variants.json (docs/variants.md)");
      return [args]() -> Status {
        auto m = probe::real_machine();
        // The scheduler is asked through an sccache session of compile/'s (doctor/ sits above it).
        auto ask = [m](const std::string& url, const std::filesystem::path& token_file) {
          auto v = compile::ask_scheduler(m, url, token_file);
          return doctor::SchedulerAnswer{v.url, v.state, v.servers, v.cpus, v.said};
        };
        auto j = doctor::to_json(doctor::examine(m, args->python, args->recipe, ask));
        if (args->variant_properties) {
          // Read back as `verify --nodes` and `pick` read the report: the same facts, one reader.
          const auto facts = rollout::parse_node_facts("(this node)", util::json_dump(j));
          const auto supported = rollout::supported_properties(facts);
          std::cout << util::json_dump(rollout::static_providers_json(supported), 2) << "\n";
          // What the node supports nothing of, and why: not part of the file a resolver reads.
          for (const auto& note : supported.notes) std::cerr << "opforge: note: " << note << "\n";
          return {};
        }
        // What opforge keeps in its cache folder: provisioned toolkits, and the entries' size.
        const auto cache_dir = settings::cache_dir(m.env);
        j["provisioned_toolkits"] = nlohmann::json::array();
        for (auto& p : cuda::list_provisioned(m.fs, cache_dir))
          j["provisioned_toolkits"].push_back(util::json_parse(cuda::provision_json_text(p)));
        // The sizes the entries' owners kept (cache::Sizes::recorded): the same entries and sum as
        // `opforge cache`, without walking gigabytes.
        const auto totals =
            cache_dir.empty() ? cache::Totals{} : cache::totals(cache::list(m.fs, cache_dir, cache::Sizes::recorded));
        j["cache"] = {{"path", cache_dir.string()},
                      {"bytes", totals.bytes},
                      {"entries", totals.entries},
                      {"unmeasured", totals.unmeasured}};
        if (args->json) std::cout << util::json_dump(j, 2) << "\n";
        else std::cout << doctor::to_text(j);
        return {};
      };
    },
}};

}  // namespace
}  // namespace opforge::cli
