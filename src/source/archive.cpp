#include "source/archive.h"

#include <archive.h>
#include <archive_entry.h>

#include <deque>
#include <map>
#include <memory>
#include <set>

#include "util/strings.h"

namespace opforge::source {

namespace {

struct ReaderFree {
  void operator()(archive* a) const {
    if (a) archive_read_free(a);
  }
};
using Reader = std::unique_ptr<archive, ReaderFree>;

constexpr const char* kRefusedHint =
    "opforge unpacks only archives whose members stay inside their folder (the rules of Python's tarfile "
    "'data' filter, docs/recipe.md [source] sdist): do not build from this archive";

/// The most symbolic links one path may pass through, as Linux's MAXSYMLINKS.
constexpr int kMaxHops = 40;

opforge::unexpected<Error> refuse(const std::string& name, const std::string& member, const std::string& rule) {
  return bad_input(name + ": member \"" + strings::cut(member) + "\": " + rule, kRefusedHint);
}

std::string libarchive_error(archive* a) {
  const char* e = archive_error_string(a);
  return e ? std::string(e) : std::string("unknown error");
}

opforge::unexpected<Error> not_tar(archive* a, const std::string& name) {
  return bad_input(name + ": not a tar archive opforge can read (libarchive: " + libarchive_error(a) + ")",
                   "[source] sdist takes a project's source archive, a .tar.gz (PEP 625); .tar.bz2 and .tar.xz are "
                   "read too");
}

/// A reader of `bytes`: tar formats only, and only the decompressors built into libarchive (one
/// it would run as an external program, lrzip or lzop, is not enabled: nothing runs at unpack time).
Result<Reader> open_reader(std::string_view bytes, const std::string& name) {
  Reader a(archive_read_new());
  if (!a) return failure("cannot read " + name + ": out of memory");
  // A filter whose library libarchive was built without would run `gzip -d` and the like instead.
  if (archive_zlib_version()) archive_read_support_filter_gzip(a.get());
  if (archive_bzlib_version()) archive_read_support_filter_bzip2(a.get());
  if (archive_liblzma_version()) archive_read_support_filter_xz(a.get());
  archive_read_support_format_tar(a.get());
  if (archive_read_open_memory(a.get(), bytes.data(), bytes.size()) != ARCHIVE_OK) return not_tar(a.get(), name);
  return a;
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> parts;
  for (auto part : strings::split(path, '/'))
    if (!part.empty() && part != ".") parts.emplace_back(part);
  return parts;
}

std::string join_path(const std::vector<std::string>& parts, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n && i < parts.size(); ++i) out += (i ? "/" : "") + parts[i];
  return out;
}

/// A member's name relative to the archive's top ("./pkg/a/" is "pkg/a"), or the rule it breaks.
/// `what` names the value in the rule: "its name", or the file a hard link names.
Result<std::string> member_path(const std::string& value, const std::string& raw, const std::string& name,
                                const char* what = "its name") {
  if (value.starts_with("/")) return refuse(name, raw, std::string(what) + " is an absolute path");
  auto parts = split_path(value);
  for (const auto& p : parts)
    if (p == "..") return refuse(name, raw, std::string(what) + " has a \"..\" component");
  return join_path(parts, parts.size());
}

const char* special_kind(mode_t type) {
  switch (type) {
    case AE_IFCHR: return "a character device";
    case AE_IFBLK: return "a block device";
    case AE_IFIFO: return "a FIFO";
    case AE_IFSOCK: return "a socket";
    default: return "a file of an unknown type";
  }
}

const char* type_name(MemberType t) {
  switch (t) {
    case MemberType::file: return "a file";
    case MemberType::directory: return "a folder";
    case MemberType::symlink: return "a symbolic link";
    case MemberType::hardlink: return "a hard link";
  }
  return "a member";
}

/// What following `target` from the folder of `link` ends at, every link of the archive followed
/// as the kernel would follow it once they are all on disk: a lexical look alone lets "l -> ." and
/// "x -> l/.." out, since ".." after a link leaves the folder the link points to.
enum class Reach { inside, outside, loop };
Reach follow(const std::map<std::string, std::string>& links, const std::string& link, const std::string& target) {
  std::vector<std::string> at = split_path(link);
  at.pop_back();
  std::deque<std::string> todo;
  for (auto& p : split_path(target)) todo.push_back(p);
  int hops = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.front());
    todo.pop_front();
    if (part == "..") {
      if (at.empty()) return Reach::outside;
      at.pop_back();
      continue;
    }
    at.push_back(std::move(part));
    auto next = links.find(join_path(at, at.size()));
    if (next == links.end()) continue;
    if (++hops > kMaxHops) return Reach::loop;
    if (next->second.starts_with("/")) return Reach::outside;
    at.pop_back();
    auto parts = split_path(next->second);
    todo.insert(todo.begin(), parts.begin(), parts.end());
  }
  return Reach::inside;
}

/// Member bookkeeping for the name rules: each member's type by path, and the folders that deeper
/// members make whether or not the archive lists them.
struct Names {
  std::map<std::string, MemberType> listed;
  std::set<std::string> folders;

  Status add(const Member& m, const std::string& raw, const std::string& name) {
    auto parts = split_path(m.path);
    for (std::size_t n = 1; n < parts.size(); ++n) {
      const std::string above = join_path(parts, n);
      auto it = listed.find(above);
      if (it == listed.end() || it->second == MemberType::directory) continue;
      if (it->second == MemberType::symlink)
        return refuse(name, raw,
                      "it is under \"" + strings::cut(above) +
                          "\", which an earlier member made a symbolic link: it would be written through the link");
      return refuse(
          name, raw,
          "it is under \"" + strings::cut(above) + "\", which an earlier member made " + type_name(it->second));
    }
    if (listed.contains(m.path)) return refuse(name, raw, "a second member of the same name");
    if (m.type != MemberType::directory && folders.contains(m.path))
      return refuse(name, raw, std::string(type_name(m.type)) + " with the name of a folder that other members are in");
    listed[m.path] = m.type;
    for (std::size_t n = 1; n < parts.size(); ++n) folders.insert(join_path(parts, n));
    return {};
  }
};

/// One header: the member, or nullopt for the archive's top itself ("./").
Result<std::optional<Member>> read_member(archive_entry* e, const std::string& name, const ArchiveLimits& limits,
                                          const Names& names) {
  const char* raw_c = archive_entry_pathname(e);
  if (!raw_c) raw_c = archive_entry_pathname_utf8(e);
  if (!raw_c || !*raw_c) return refuse(name, "", "a member with no name");
  const std::string raw = raw_c;
  Member m;
  m.path = OPFORGE_TRY(member_path(raw, raw, name));
  const mode_t type = archive_entry_filetype(e);
  if (const char* hard = archive_entry_hardlink(e)) {
    m.type = MemberType::hardlink;
    m.target = OPFORGE_TRY(member_path(hard, raw, name, "the file its hard link names"));
    auto it = names.listed.find(m.target);
    if (it == names.listed.end() || (it->second != MemberType::file && it->second != MemberType::hardlink))
      return refuse(name, raw,
                    "a hard link to \"" + strings::cut(hard) + "\", which is not a file earlier in the archive");
  } else if (type == AE_IFREG) {
    m.type = MemberType::file;
  } else if (type == AE_IFDIR) {
    m.type = MemberType::directory;
  } else if (type == AE_IFLNK) {
    m.type = MemberType::symlink;
    const char* target = archive_entry_symlink(e);
    if (!target) target = archive_entry_symlink_utf8(e);
    m.target = target ? target : "";
    if (m.target.empty()) return refuse(name, raw, "a symbolic link with no target");
    if (m.target.starts_with("/"))
      return refuse(name, raw, "a symbolic link to the absolute path \"" + strings::cut(m.target) + "\"");
  } else {
    return refuse(name, raw, std::string(special_kind(type)) + ": device files, FIFOs and sockets are not unpacked");
  }
  if (m.path.empty()) {
    if (m.type == MemberType::directory) return std::optional<Member>{};
    return refuse(name, raw, std::string(type_name(m.type)) + " named as the archive's top itself");
  }
  // Only the permission bits a source file needs: setuid, setgid, sticky and group/other write go.
  const unsigned perm = static_cast<unsigned>(archive_entry_perm(e));
  m.mode = m.type == MemberType::directory || (perm & 0100) ? 0755 : 0644;
  if (m.type == MemberType::file || m.type == MemberType::hardlink) {
    const la_int64_t size = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;
    m.size = size > 0 ? static_cast<std::uint64_t>(size) : 0;
    if (m.size > limits.member_bytes)
      return refuse(name, raw,
                    std::to_string(m.size) + " bytes, more than the limit of " + std::to_string(limits.member_bytes) +
                        " for one member");
  }
  return std::optional<Member>(std::move(m));
}

Status check_links(const std::vector<Member>& members, const std::string& name) {
  std::map<std::string, std::string> links;
  for (const auto& m : members)
    if (m.type == MemberType::symlink) links[m.path] = m.target;
  for (const auto& m : members) {
    if (m.type != MemberType::symlink) continue;
    switch (follow(links, m.path, m.target)) {
      case Reach::inside: break;
      case Reach::outside:
        return refuse(
            name, m.path,
            "a symbolic link to \"" + strings::cut(m.target) + "\", which leads outside the archive's folder");
      case Reach::loop: return refuse(name, m.path, "a symbolic link in a loop of symbolic links");
    }
  }
  return {};
}

/// Reads the current member's content, at most `limit` bytes.
Result<std::string> read_content(archive* a, const Member& m, const std::string& name, std::uint64_t limit) {
  std::string data;
  data.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(m.size, limit)));
  char buf[1 << 16];
  la_ssize_t n = 0;
  while ((n = archive_read_data(a, buf, sizeof buf)) > 0) {
    data.append(buf, static_cast<std::size_t>(n));
    if (data.size() > limit)
      return refuse(name, m.path, "more than the limit of " + std::to_string(limit) + " bytes for one member");
  }
  if (n < 0)
    return bad_input(
        name + ": member \"" + strings::cut(m.path) + "\" cannot be read (libarchive: " + libarchive_error(a) + ")",
        "the archive is damaged or cut short: download it again");
  return data;
}

Status make_parent(probe::FileSystem& files, const fs::path& path) {
  if (files.type_of(path.parent_path()) == probe::FileType::directory) return {};
  if (auto made = files.create_directories(path.parent_path()); !made) return opforge::unexpected(made.error());
  return {};
}

/// The second pass: the members checked by check_archive, written under `into` in a safe order.
Status write_members(probe::FileSystem& files, std::string_view bytes, const std::string& name, const fs::path& into,
                     const std::vector<Member>& members, const ArchiveLimits& limits) {
  Reader a = OPFORGE_TRY(open_reader(bytes, name));
  std::vector<const Member*> later;
  std::map<std::string, unsigned> modes;
  std::size_t next = 0;
  archive_entry* e = nullptr;
  for (int rc; next < members.size() && (rc = archive_read_next_header(a.get(), &e)) != ARCHIVE_EOF;) {
    if (rc < ARCHIVE_WARN) return not_tar(a.get(), name);
    // The same bytes give the same headers: only the archive's top ("./") was left out.
    auto parts = split_path(archive_entry_pathname(e) ? archive_entry_pathname(e) : "");
    if (join_path(parts, parts.size()) != members[next].path) continue;
    const Member& m = members[next++];
    const fs::path to = into / m.path;
    if (m.type == MemberType::directory) {
      if (auto made = files.create_directories(to); !made) return opforge::unexpected(made.error());
    } else if (m.type == MemberType::file) {
      std::string data = OPFORGE_TRY(read_content(a.get(), m, name, limits.member_bytes));
      OPFORGE_CHECK(make_parent(files, to));
      OPFORGE_CHECK(files.write_file_atomic(to, data, m.mode));
      modes[m.path] = m.mode;
    } else {
      later.push_back(&m);
    }
  }
  if (next != members.size()) return failure(name + ": the archive read differently the second time");
  // Hard links as copies of their files (the tree is a copy anyway), then symlinks, last.
  for (const Member* m : later) {
    if (m->type != MemberType::hardlink) continue;
    std::string data = OPFORGE_TRY(files.read_file(into / m->target, limits.member_bytes));
    OPFORGE_CHECK(make_parent(files, into / m->path));
    OPFORGE_CHECK(files.write_file_atomic(into / m->path, data, modes[m->target]));
    modes[m->path] = modes[m->target];
  }
  for (const Member* m : later) {
    if (m->type != MemberType::symlink) continue;
    OPFORGE_CHECK(make_parent(files, into / m->path));
    OPFORGE_CHECK(files.create_symlink(m->target, into / m->path));
  }
  return {};
}

}  // namespace

Result<std::vector<Member>> check_archive(std::string_view bytes, const std::string& name,
                                          const ArchiveLimits& limits) {
  if (bytes.size() > limits.archive_bytes)
    return bad_input(name + ": " + std::to_string(bytes.size()) + " bytes, more than the limit of " +
                     std::to_string(limits.archive_bytes) + " for a source archive");
  Reader a = OPFORGE_TRY(open_reader(bytes, name));
  std::vector<Member> members;
  Names names;
  std::uint64_t count = 0, total = 0;
  archive_entry* e = nullptr;
  for (int rc; (rc = archive_read_next_header(a.get(), &e)) != ARCHIVE_EOF;) {
    if (rc < ARCHIVE_WARN) return not_tar(a.get(), name);
    if (++count > limits.members)
      return bad_input(name + ": holds more than " + std::to_string(limits.members) + " members (the limit)",
                       kRefusedHint);
    auto m = OPFORGE_TRY(read_member(e, name, limits, names));
    if (!m) continue;
    OPFORGE_CHECK(names.add(*m, archive_entry_pathname(e), name));
    total += m->size;
    if (total > limits.total_bytes)
      return bad_input(
          name + ": its members add up to more than " + std::to_string(limits.total_bytes) + " bytes (the limit)",
          kRefusedHint);
    members.push_back(std::move(*m));
  }
  if (total > limits.ratio_floor && total / std::max<std::uint64_t>(bytes.size(), 1) > limits.ratio)
    return bad_input(name + ": " + std::to_string(bytes.size()) + " bytes that expand to " + std::to_string(total) +
                         ", more than " + std::to_string(limits.ratio) +
                         " times as much: a compression bomb, not a source archive",
                     kRefusedHint);
  OPFORGE_CHECK(check_links(members, name));
  return members;
}

Result<std::string> top_folder(const std::vector<Member>& members, const std::string& name) {
  const std::string hint =
      "an sdist ({name}-{version}.tar.gz, PEP 625) holds one folder, {name}-{version}/, with the project in it";
  if (members.empty()) return bad_input(name + ": holds no members", hint);
  std::set<std::string> tops;
  for (const auto& m : members) tops.insert(strings::cut(split_path(m.path).front()));
  if (tops.size() > 1) {
    std::vector<std::string> some(tops.begin(), tops.end());
    if (some.size() > 5) some.resize(5), some.push_back("...");
    return bad_input(name + ": holds " + std::to_string(tops.size()) + " entries at its top (" +
                         strings::join(some, ", ") + "), not one folder",
                     hint);
  }
  for (const auto& m : members)
    if (m.path.find('/') == std::string::npos && m.type != MemberType::directory)
      return bad_input(
          name + ": holds " + type_name(m.type) + " at its top (\"" + strings::cut(m.path) + "\"), not one folder",
          hint);
  return split_path(members.front().path).front();
}

Result<std::string> unpack(probe::FileSystem& files, std::string_view bytes, const std::string& name,
                           const fs::path& into, const ArchiveLimits& limits) {
  auto members = OPFORGE_TRY(check_archive(bytes, name, limits));
  std::string top = OPFORGE_TRY(top_folder(members, name));
  if (files.type_of(into) != probe::FileType::none)
    return failure("cannot unpack " + name + " into " + into.string() + ": it exists already");
  if (auto made = files.create_directories(into); !made) return opforge::unexpected(made.error());
  if (auto written = write_members(files, bytes, name, into, members, limits); !written) {
    (void)files.remove_all(into);
    return opforge::unexpected(written.error());
  }
  return top;
}

}  // namespace opforge::source
