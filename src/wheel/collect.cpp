#include <algorithm>

#include "probe/links.h"
#include "wheel/wheel.h"

namespace opforge::wheel {
namespace {

Status walk(const probe::FileSystem& fs, const fs::path& root, const fs::path& dir, const std::string& prefix,
            std::vector<File>& out, int depth) {
  if (depth > 32) return bad_input(dir.string() + ": folders nested too deep (a symlink loop?)");
  auto names = OPFORGE_TRY(fs.list_directory(dir));
  for (const auto& name : names) {
    fs::path path = dir / name;
    std::string inner = prefix.empty() ? name : prefix + "/" + name;
    // A link is packed as what it points to only while that stays inside the folder: a wheel never
    // holds a file from elsewhere.
    if (fs.type_of(path) == probe::FileType::symlink)
      if (auto link = probe::link_out_on_path(fs, root, path))
        return bad_input(path.string() + " is a symbolic link to " + link->target.string() + ", outside " +
                             root.string() + ": a wheel holds only the folder's own files",
                         "remove the link, or copy the file into the folder");
    auto type = fs.resolved_type(path);
    if (type == probe::FileType::directory) {
      if (name == "__pycache__") continue;
      OPFORGE_CHECK(walk(fs, root, path, inner, out, depth + 1));
    } else if (type == probe::FileType::regular) {
      if (name.ends_with(".pyc")) continue;
      auto content = OPFORGE_TRY(fs.read_file(path, Limits{}.entry_bytes));
      out.push_back({inner, std::move(content), fs.is_executable(path) ? 0755u : 0644u});
    } else {
      return bad_input(path.string() + " is neither a file nor a folder (dangling symlink?)",
                       "remove it from the folder being packaged");
    }
  }
  return {};
}

}  // namespace

Result<std::vector<File>> collect_files(const probe::FileSystem& fs, const fs::path& dir, std::string_view prefix) {
  std::vector<File> out;
  OPFORGE_CHECK(walk(fs, dir, dir, std::string(prefix), out, 0));
  std::sort(out.begin(), out.end(), [](const File& a, const File& b) { return a.path < b.path; });
  return out;
}

}  // namespace opforge::wheel
