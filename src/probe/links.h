#pragma once
/// Symbolic links that lead out of a tree opforge owns (a scratch tree, a folder it packs, a
/// project's include folder): nothing opforge copies, resumes, scans or packs follows one.
#include <filesystem>
#include <optional>

#include "probe/machine.h"

namespace opforge::probe {

/// Whether `path` is `tree` or below it, lexically (both made normal first).
bool is_within(const fs::path& path, const fs::path& tree);
/// A symbolic link that leads out of the tree opforge owns: where the link is, and where it leads.
struct LinkOut {
  fs::path link;
  fs::path target;  ///< resolved when it can be, else as written
};
/// The first symbolic link on the way from `root` to `path` (root/a, root/a/b, ... `path` itself)
/// whose target lies outside `root`: a reader that follows it leaves the tree. nullopt when every
/// step stays inside, or `path` is not below `root`.
std::optional<LinkOut> link_out_on_path(const FileSystem& fs, const fs::path& root, const fs::path& path);
/// The first symbolic link anywhere in the tree `root` (walked without following links) whose
/// target lies outside it; nullopt when there is none.
std::optional<LinkOut> link_out_in_tree(const FileSystem& fs, const fs::path& root);

}  // namespace opforge::probe
