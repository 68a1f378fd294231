// `opforge env RECIPE`: the plan's exports, for `eval` in a shell or for another build tool.
#include <iostream>

#include "cli/command.h"
#include "compile/command/command_backend.h"
#include "compile/wrap/environment.h"
#include "compiler/host.h"
#include "plan/json.h"
#include "plan/plan.h"
#include "recipe/bundled.h"
#include "util/json.h"
#include "util/strings.h"

namespace opforge::cli {
namespace {

Registrar env_command{{
    "env",
    "print the environment a build of a recipe needs (export lines or JSON)",
    [](CLI::App& app) -> Runner {
      struct Args {
        std::string recipe;
        std::string format = "sh";
        std::string python;
      };
      auto args = std::make_shared<Args>();
      app.add_option("recipe", args->recipe, "recipe file (TOML), or 'default' for the bundled default recipe")
          ->required();
      app.add_option("--format", args->format, "sh (export lines) or json")->check(CLI::IsMember({"sh", "json"}));
      app.add_option("--python", args->python, "the Python whose torch decides the CUDA version");
      return [args]() -> Status {
        plan::Options opts;
        if (!args->python.empty()) opts.python = args->python;
        auto real = probe::real_machine();
        const auto arg = recipe::resolve_recipe_arg(real.fs, args->recipe);
        opts.build_dir = arg.build_dir;
        opts.dist_dir = arg.dist_dir;
        auto p = OPFORGE_TRY(plan::make(real, arg.file, opts));
        // The same variables a command build gets (compiler, toolkit, ops, reproducibility), for a
        // build run in the source tree itself.
        auto vars = compile::planned_exports(real, p);
        // CC, CXX and PATH name the host wrappers, which run the shim (or the cpu_target
        // wrappers), PYTORCH_NVCC the nvcc wrapper: make them, as a build would.
        if (p.host) OPFORGE_CHECK(compiler::ensure_shim(real.fs, *p.host));
        OPFORGE_CHECK(compile::write_planned_wrappers(real, p));
        if (args->format == "json") {
          std::cout << util::json_dump(nlohmann::json(vars), 2) << "\n";
        } else {
          for (auto& [k, v] : vars) {
            // Always quoted: values with spaces or '$' survive `eval` unchanged.
            std::string q = strings::shell_quote(v);
            if (q.empty() || q.front() != '\'') {
              q = "'";
              for (char c : v) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
              q += "'";
            }
            std::cout << "export " << k << "=" << q << "\n";
          }
        }
        return {};
      };
    },
}};

}  // namespace
}  // namespace opforge::cli
