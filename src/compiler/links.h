#pragma once
/// Compiler links opforge makes and removes: `toolchain link` into a toolkit's bin/ (as the guides
/// say to do by hand), and the shim folder (compiler::ensure_shim, compiler/host.h). Each folder
/// gets a list, `.opforge-links`, of what was made and what it replaced.
#include <filesystem>

#include "compiler/host.h"
#include "cuda/toolkit.h"
#include "probe/machine.h"
#include "util/error.h"

namespace opforge::compiler {

/// gcc and g++ symlinks in <root>/bin, as the guides say to do by hand; refuses to overwrite
/// anything that is not a symlink it would create (or an earlier opforge compiler link); idempotent.
Status link_system(probe::FileSystem& fs, const cuda::Toolkit& tk, const HostChoice& choice);

/// Removes exactly what link_system made (listed in <root>/bin/.opforge-links, and still pointing
/// where it left them), restoring any compiler link of the user's it replaced. Returns the count.
/// The list is not trusted: only its gcc, g++, cc and c++ rows are used, only those entries
/// directly inside that bin/ are touched, and only while they are symlinks to the recorded target.
Result<int> unlink_system(probe::FileSystem& fs, const cuda::Toolkit& tk);

/// Removes the links ensure_shim (or `toolchain link --into`) made in a folder, the same way.
Result<int> remove_shim(probe::FileSystem& fs, const fs::path& shim_dir);

}  // namespace opforge::compiler
