#include "compile/command/wheel_match.h"

#include <fnmatch.h>

#include "probe/links.h"

namespace opforge::compile {

namespace fs = std::filesystem;

Result<std::vector<fs::path>> match_glob(const probe::FileSystem& fs, const fs::path& root, const std::string& glob) {
  fs::path pattern(glob);
  fs::path folder = pattern.parent_path();
  std::string name = pattern.filename().string();
  if (name.empty() || folder.string().find_first_of("*?[") != std::string::npos)
    return bad_input("[build] wheel_glob = \"" + glob + "\": only the file name may hold wildcards",
                     "e.g. wheel_glob = \"dist/*.whl\"");
  fs::path dir = folder.is_absolute() ? folder : root / folder;
  std::vector<fs::path> out;
  if (fs.resolved_type(dir) != probe::FileType::directory) return out;
  auto names = OPFORGE_TRY(fs.list_directory(dir));
  for (const auto& n : names)
    if (::fnmatch(name.c_str(), n.c_str(), 0) == 0) out.push_back(dir / n);
  return out;
}

Result<fs::path> made_wheel(const probe::FileSystem& fs, const fs::path& tree, const std::string& glob,
                            const fs::path& log) {
  auto fresh = OPFORGE_TRY(match_glob(fs, tree, glob));
  if (fresh.empty())
    return failure("the build command succeeded but made no file matching \"" + glob + "\"",
                   "set [build] wheel_glob to where the command writes its wheel; log: " + log.string());
  if (fresh.size() > 1) {
    std::string names;
    for (const auto& p : fresh) names += "\n  " + p.filename().string();
    return failure("the build command made several wheels matching \"" + glob + "\":" + names,
                   "narrow [build] wheel_glob to one of them");
  }
  // A wheel found through a link out of the tree (its dist/ or the file itself) is not this
  // build's: packing it would put files from elsewhere into the wheel.
  if (probe::is_within(fresh.front(), tree))
    if (auto link = probe::link_out_on_path(fs, tree, fresh.front()))
      return failure("the wheel " + fresh.front().string() + " is reached through '" + link->link.string() +
                         "', a symbolic link to '" + link->target.string() + "' out of the build tree",
                     "a build writes its wheel inside its own tree: remove the link");
  return fresh.front();
}

}  // namespace opforge::compile
