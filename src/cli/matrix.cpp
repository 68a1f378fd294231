// `opforge matrix RECIPE [--json]`: the recipe's [matrix] cells; builds nothing. The JSON is a
// GitHub Actions `strategy.matrix` (an include list).
#include <iostream>

#include "cli/command.h"
#include "plan/matrix.h"
#include "recipe/bundled.h"
#include "recipe/recipe.h"
#include "settings/settings.h"

namespace opforge::cli {
namespace {

Registrar matrix_command{{
    "matrix",
    "list a recipe's [matrix] cells: id, torch, Python, CUDA and the toolkit each would use",
    [](CLI::App& app) -> Runner {
      struct Args {
        std::string recipe;
        bool json = false;
      };
      auto args = std::make_shared<Args>();
      app.add_option("recipe", args->recipe, "recipe file (TOML), or 'default' for the bundled default recipe")
          ->required();
      app.add_flag("--json", args->json, "one line of JSON for a CI matrix: {\"include\": [...]}");
      return [args]() -> Status {
        auto m = probe::real_machine();
        auto r = OPFORGE_TRY(recipe::load(m, recipe::resolve_recipe_arg(m.fs, args->recipe).file));
        // No [matrix]: one build and no cells, said as such; a CI matrix (--json) needs cells.
        if (!r.matrix.present && !args->json) {
          std::cout << args->recipe << ": no [matrix], so no cells: one build, `opforge build " << args->recipe
                    << "`\n";
          return {};
        }
        if (!r.matrix.present)
          return bad_input("the recipe " + args->recipe + " has no [matrix]", "add [matrix] torch = [\"2.15.0\"]");
        const auto cache = settings::cache_dir(m.env);
        auto views = plan::describe_cells(m, r, OPFORGE_TRY(plan::cells(m, r, cache)), cache);
        if (args->json) {
          std::cout << plan::matrix_json(views) << "\n";
          return {};
        }
        for (auto& v : views) {
          std::cout << v.cell.index << "  " << v.cell.id << "\n"
                    << "     " << v.cell.torch_requirement << ", Python " << v.cell.python_version << " ("
                    << v.cell.python << ")" << (v.cell.platform.empty() ? std::string() : ", for " + v.cell.platform)
                    << "\n"
                    << (v.cell.arch.empty() ? std::string()
                        : v.cell.fallback   ? "     arch " + v.cell.arch +
                                                ": the plain wheel, for every GPU the cell's variants run on\n"
                                          : "     arch " + v.cell.arch + ": a variant wheel\n")
                    << "     environment " << v.cell.env.string()
                    << (v.cell.user_env ? " (named by the recipe)"
                        : v.cell.ready  ? " (made)"
                                        : " (made by the build)")
                    << "\n"
                    << "     CUDA " << (v.cuda.empty() ? "?" : v.cuda) << ", toolkit " << v.toolkit_from
                    << (v.toolkit.empty() ? "" : ": " + v.toolkit) << "\n";
        }
        // Whether a wheel uses torch's stable ABI alone is known once it is built: say what then happens.
        if (r.matrix.share_stable_abi && views.size() > 1)
          std::cout << "a cell whose wheel uses torch's stable C ABI alone serves the later cells of its Python and "
                       "platform whose "
                       "torch its requirement admits (they load it instead of building; [matrix] share_stable_abi = "
                       "false builds every cell)\n";
        return {};
      };
    },
}};

}  // namespace
}  // namespace opforge::cli
