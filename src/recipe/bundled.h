#pragma once
/// `default`: the recipe that comes with opforge, by name, for every command that takes a recipe.
#include <filesystem>
#include <optional>
#include <string>

#include "probe/machine.h"

namespace opforge::recipe {

namespace fs = std::filesystem;

/// What a command's recipe argument names.
struct RecipeArg {
  fs::path file;  ///< the recipe file to load
  /// For the bundled recipe: the working folder's build/ops and dist (absolute), not folders
  /// beside the installed recipe, which may be read-only. nullopt for a recipe file.
  std::optional<fs::path> build_dir, dist_dir;
};

/// "default" names the bundled recipe (probe::data_dir's recipes/default.toml) while no file of
/// that name is in the working folder; any other argument is the recipe file itself.
RecipeArg resolve_recipe_arg(const probe::FileSystem& fs, const std::string& arg);

}  // namespace opforge::recipe
