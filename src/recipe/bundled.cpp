#include "recipe/bundled.h"

namespace opforge::recipe {

RecipeArg resolve_recipe_arg(const probe::FileSystem& fs, const std::string& arg) {
  if (arg != "default" || fs.type_of("default") != probe::FileType::none) return {arg, std::nullopt, std::nullopt};
  return {probe::data_dir(fs) / "recipes/default.toml", fs.absolute("build/ops"), fs.absolute("dist")};
}

}  // namespace opforge::recipe
