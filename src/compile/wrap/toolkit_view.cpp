#include "compile/wrap/toolkit_view.h"

#include <algorithm>

#include "util/hash.h"
#include "util/strings.h"

namespace opforge::compile {

namespace fs = std::filesystem;

std::optional<ToolkitView> toolkit_view(const probe::FileSystem& fs, const fs::path& cache_dir, const fs::path& real,
                                        const fs::path& wrapper) {
  if (cache_dir.empty() || wrapper.empty() || fs.resolved_type(real / "bin" / "nvcc") != probe::FileType::regular)
    return std::nullopt;
  auto top = fs.list_directory(real);
  auto bin = fs.list_directory(real / "bin");
  if (!top || !bin) return std::nullopt;
  ToolkitView v;
  v.real = real;
  v.nvcc = wrapper;
  for (const auto& name : *top)
    if (name != "bin") v.links.emplace_back(name, real / name);
  for (const auto& name : *bin)
    if (name != "nvcc") v.links.emplace_back("bin/" + name, real / "bin" / name);
  v.links.emplace_back("bin/nvcc", wrapper);
  // The wrapper script reads the rule beside the path it was started by.
  if (std::find(bin->begin(), bin->end(), "rule.json") == bin->end())
    v.links.emplace_back("bin/rule.json", wrapper.parent_path() / "rule.json");
  std::sort(v.links.begin(), v.links.end());
  std::string key;
  for (const auto& [rel, target] : v.links) key += rel + "\t" + target.string() + "\n";
  v.root = cache_dir / "toolkit-view" / sha256_hex(key).substr(0, 16);
  return v;
}

Status write_toolkit_view(probe::FileSystem& fs, const ToolkitView& view) {
  if (fs.type_of(view.root) == probe::FileType::directory) return {};
  OPFORGE_CHECK(fs.create_directories(view.root.parent_path()));
  // A name no other build uses at the same time, beside the view (a rename stays in one file system).
  const fs::path unique = OPFORGE_TRY(fs.make_temp_directory("opforge-view-"));
  (void)fs.remove_all(unique);
  const fs::path temp = view.root.string() + "." + unique.filename().string();
  OPFORGE_CHECK(fs.create_directories(temp / "bin"));
  for (const auto& [rel, target] : view.links) OPFORGE_CHECK(fs.create_symlink(target, temp / rel));
  if (auto moved = fs.rename(temp, view.root); !moved) {
    (void)fs.remove_all(temp);
    // Another build made the same view meanwhile: it is the same.
    if (fs.type_of(view.root) == probe::FileType::directory) return {};
    return opforge::unexpected(moved.error());
  }
  return {};
}

}  // namespace opforge::compile
