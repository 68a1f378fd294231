// Compiler links that make a chosen compiler visible to nvcc (the shim folder, a toolkit's bin/),
// and the list beside them that lets `toolchain unlink` remove exactly what opforge made.
#include "compiler/links.h"

#include <map>

#include "compiler/cpu_target.h"
#include "compiler/resolve.h"
#include "util/strings.h"

namespace opforge::compiler {

namespace {

bool looks_like_compiler(const fs::path& target) { return is_compiler_file_name(target.filename().string()); }

// What opforge made in a folder: "<name>\t<target>\t<previous target or empty>" per line, so that
// unlink removes exactly those links and puts back a compiler link of the user's it replaced.
constexpr const char* kManifest = ".opforge-links";

struct Made {
  fs::path target, previous;
};

std::map<std::string, Made> read_manifest(const probe::FileSystem& fs, const fs::path& dir) {
  std::map<std::string, Made> out;
  // A list is a few lines; a FIFO or a device in its place would never end.
  auto text = fs.read_file(dir / kManifest, 64 * 1024);
  if (!text) return out;
  for (auto line : strings::split(*text, '\n')) {
    auto f = strings::split(line, '\t');
    if (f.size() == 3 && !f[0].empty()) out[std::string(f[0])] = {std::string(f[1]), std::string(f[2])};
  }
  return out;
}

Status write_manifest(probe::FileSystem& fs, const fs::path& dir, const std::map<std::string, Made>& made) {
  if (made.empty()) {
    if (fs.type_of(dir / kManifest) != probe::FileType::none) OPFORGE_CHECK(fs.remove(dir / kManifest));
    return {};
  }
  std::string text;
  for (auto& [name, m] : made) text += name + "\t" + m.target.string() + "\t" + m.previous.string() + "\n";
  return fs.write_file_atomic(dir / kManifest, text, 0644);
}

Status place_links(probe::FileSystem& fs, const fs::path& dir,
                   const std::vector<std::pair<std::string, fs::path>>& links) {
  // Check everything first so that a refusal leaves nothing half-done.
  for (auto& [name, target] : links) {
    auto p = dir / name;
    auto t = fs.type_of(p);
    if (t == probe::FileType::none) continue;
    if (t != probe::FileType::symlink)
      return unsatisfied("refusing to replace " + p.string() + ": it is not a symlink",
                         "move it away yourself if it should be replaced");
    auto cur = fs.read_symlink(p);
    if (cur && *cur != target && !looks_like_compiler(*cur))
      return unsatisfied("refusing to replace " + p.string() + " -> " + cur->string() +
                             ": it is not a compiler link opforge would make",
                         "remove it yourself if it should be replaced");
  }
  if (fs.resolved_type(dir) != probe::FileType::directory) OPFORGE_CHECK(fs.create_directories(dir));
  auto made = read_manifest(fs, dir);
  const auto before = made.size();
  bool changed = false;
  for (auto& [name, target] : links) {
    auto p = dir / name;
    std::optional<fs::path> cur;
    if (fs.type_of(p) == probe::FileType::symlink)
      if (auto c = fs.read_symlink(p)) cur = *c;
    if (cur && *cur == target) continue;  // already right: ours stays ours, the user's stays theirs
    // A link of the user's that gets replaced is remembered; one of ours keeps its first previous.
    fs::path previous = made.count(name) ? made[name].previous : cur.value_or(fs::path());
    OPFORGE_CHECK(fs.create_symlink(target, p));
    made[name] = {target, previous};
    changed = true;
  }
  if (changed || made.size() != before) OPFORGE_CHECK(write_manifest(fs, dir, made));
  return {};
}

/// The names place_links() makes. The list file may have been edited by anyone who can write
/// the folder, so unlink trusts a row only for these names, directly inside the folder.
bool is_link_name(std::string_view name) { return name == "gcc" || name == "g++" || name == "cc" || name == "c++"; }

/// Removes the links opforge made in dir (those still pointing where it left them) and restores
/// what they replaced; links it did not make are left alone. Returns how many were removed.
Result<int> remove_links(probe::FileSystem& fs, const fs::path& dir) {
  auto made = read_manifest(fs, dir);
  int removed = 0;
  for (auto& [name, m] : made) {
    // Anything else in the list (a path with '/', "..", another name) was not written by link.
    if (!is_link_name(name)) continue;
    // A previous target is only ever a compiler link of the user's (place_links refuses others).
    if (!m.previous.empty() && !looks_like_compiler(m.previous)) continue;
    auto p = dir / name;
    if (fs.type_of(p) != probe::FileType::symlink) continue;
    auto cur = fs.read_symlink(p);
    if (!cur || *cur != m.target) continue;  // changed since: not ours any more
    if (m.previous.empty()) OPFORGE_CHECK(fs.remove(p));
    else OPFORGE_CHECK(fs.create_symlink(m.previous, p));
    ++removed;
  }
  OPFORGE_CHECK(write_manifest(fs, dir, {}));
  return removed;
}

}  // namespace

Status ensure_shim(probe::FileSystem& fs, const HostChoice& choice) {
  if (!invocation(choice).needs_shim) return {};
  const auto& c = choice.compiler;
  if (!choice.cpu_target.empty()) {
    auto target = target::find_cpu_target(choice.cpu_target);
    if (!target) return bad_input("unknown CPU target \"" + choice.cpu_target + "\"");
    return write_wrappers(fs, *choice.shim_dir, c, *target);
  }
  return place_links(fs, *choice.shim_dir, {{"gcc", c.cc}, {"g++", c.cxx}, {"cc", c.cc}, {"c++", c.cxx}});
}

Status link_system(probe::FileSystem& fs, const cuda::Toolkit& tk, const HostChoice& choice) {
  const auto& c = choice.compiler;
  // nvcc prepends its own bin/ to PATH and runs bare gcc and g++: both are needed.
  return place_links(fs, tk.root / "bin", {{"gcc", c.cc}, {"g++", c.cxx}});
}

Result<int> unlink_system(probe::FileSystem& fs, const cuda::Toolkit& tk) { return remove_links(fs, tk.root / "bin"); }

Result<int> remove_shim(probe::FileSystem& fs, const fs::path& shim_dir) { return remove_links(fs, shim_dir); }

}  // namespace opforge::compiler
