#pragma once
/// Unpacking an untrusted tar archive (a project's sdist) safely. The archive is bytes in memory,
/// read once through probe::FileSystem, so the bytes whose sha256 was checked are the bytes
/// unpacked; libarchive (the only includer of archive.h) parses them and touches nothing.
/// The rules are those of Python's tarfile `data` filter (PEP 706), checked for every member
/// before anything is written: no absolute names and no `..`; links stay inside the tree; nothing
/// is written through a link; no device files, FIFOs or sockets; no two members of one name; and
/// bounds on the members' count and sizes.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "probe/machine.h"
#include "util/error.h"

namespace opforge::source {

namespace fs = std::filesystem;

/// Bounds on what an archive may unpack to; generous for any real sdist, tight enough that a
/// hostile archive cannot fill the disk or memory. Tests lower them.
struct ArchiveLimits {
  std::uint64_t members = 200'000;
  std::uint64_t total_bytes = 8ull << 30;    ///< all members' contents together
  std::uint64_t member_bytes = 2ull << 30;   ///< one member's content (held in memory while written)
  std::uint64_t archive_bytes = 1ull << 30;  ///< the compressed archive (read into memory)
  /// Expanded / compressed, checked once the contents pass `ratio_floor` bytes: source code
  /// compresses about 5:1, a compression bomb a thousand times more.
  std::uint64_t ratio = 200;
  std::uint64_t ratio_floor = 64ull << 20;
};

enum class MemberType { file, directory, symlink, hardlink };

/// One member as it will be written: `path` relative and normalised ("pkg-1.0/setup.py", no "./",
/// no trailing '/'); `target` a symlink's target as stored, or a hard link's member path.
struct Member {
  std::string path{};
  MemberType type = MemberType::file;
  std::string target{};
  std::uint64_t size = 0;
  unsigned mode = 0644;  ///< normalised: 0644 or 0755 for files, 0755 for folders
};

/// Every member of the tar archive `bytes` (any compression libarchive reads), checked against the
/// rules above. `name` names the archive in errors. bad_input "NAME: member "M": RULE" for the first
/// member that breaks a rule; "NAME: not a tar archive" when it cannot be read as one.
Result<std::vector<Member>> check_archive(std::string_view bytes, const std::string& name,
                                          const ArchiveLimits& limits = {});

/// The one folder an sdist holds at its top (PEP 625: `{name}-{version}/`); bad_input naming what
/// the archive holds there instead.
Result<std::string> top_folder(const std::vector<Member>& members, const std::string& name);

/// Checks the archive (check_archive, top_folder), then writes its members into the folder `into`,
/// which must not exist yet: folders and files first, hard links as copies of their files, symlinks
/// last, so that no write can pass through a link. setuid, setgid and sticky bits are dropped.
/// On any error `into` is removed and nothing else was written. Returns the top folder's name.
Result<std::string> unpack(probe::FileSystem& files, std::string_view bytes, const std::string& name,
                           const fs::path& into, const ArchiveLimits& limits = {});

}  // namespace opforge::source
