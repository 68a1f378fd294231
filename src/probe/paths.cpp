#include "probe/links.h"
#include "probe/machine.h"
#include "util/strings.h"

#include <algorithm>
#include <charconv>

namespace opforge::probe {

fs::path data_dir(const FileSystem& fs) {
  auto holds_data = [&](const fs::path& dir) {
    return !dir.empty() && fs.resolved_type(dir / "src/python/opforge_ops") == FileType::directory;
  };
  // A development build has its checkout compiled in (CMakeLists.txt) and prefers it, so that it
  // uses the ops and Python package beside it, not an older installed copy. The platform wheel's
  // binary has none: it must not depend on the folder it was built in.
  const fs::path source(OPFORGE_SOURCE_DIR);
  if (holds_data(source)) return source;
  // Installed: <prefix>/bin/opforge beside <prefix>/share/opforge, wherever the prefix was put (a
  // venv, ~/.local, /usr/local); the link is read, not the name it was called by.
  if (auto exe = fs.canonical("/proc/self/exe")) {
    const fs::path beside = exe->parent_path().parent_path() / "share/opforge";
    if (holds_data(beside)) return beside;
  }
  return fs::path(OPFORGE_DATA_DIR);
}

std::vector<std::string> self_command(const FileSystem& fs) {
  auto exe = fs.canonical("/proc/self/exe");
  if (!exe) return {};
  if (!exe->filename().string().starts_with("ld-")) return {exe->string()};
  // Run by the loader: its argv is the loader, its options (those of ld.so(8) that take a value
  // have it next), then the program.
  auto cmdline = fs.read_file("/proc/self/cmdline");
  if (!cmdline) return {};
  std::vector<std::string> argv;
  for (auto a : strings::split(*cmdline, '\0')) argv.emplace_back(a);
  std::vector<std::string> out = {exe->string()};
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--library-path" || a == "--preload" || a == "--argv0" || a == "--inhibit-rpath" || a == "--audit") {
      if (i + 1 >= argv.size()) return {};
      out.push_back(a);
      out.push_back(argv[++i]);
    } else if (a.starts_with("--")) {
      out.push_back(a);
    } else {
      out.push_back(a);
      return out;
    }
  }
  return {};
}

fs::path default_cache_dir(const Environment& env) {
  // Only absolute folders: a relative HOME or XDG_CACHE_HOME (the XDG spec says to ignore those)
  // would put the cache inside the working folder, often the source tree, making it dirty.
  auto absolute = [&](const char* var) -> std::optional<fs::path> {
    auto v = env.get(var);
    if (!v || v->empty() || v->find('\0') != std::string::npos || !fs::path(*v).is_absolute()) return std::nullopt;
    return fs::path(*v);
  };
  if (auto v = env.get("OPFORGE_CACHE_DIR"); v && !v->empty()) return *v;  // the user's choice
  if (auto v = absolute("XDG_CACHE_HOME")) return *v / "opforge";
  if (auto v = absolute("HOME")) return *v / ".cache" / "opforge";
  return {};
}

bool is_within(const fs::path& path, const fs::path& tree) {
  if (tree.empty()) return false;
  const auto p = path.lexically_normal(), t = tree.lexically_normal();
  auto [a, b] = std::mismatch(t.begin(), t.end(), p.begin(), p.end());
  return a == t.end() || (std::next(a) == t.end() && a->empty());
}

namespace {

/// `link` (a symbolic link) when it leads out of `root` (canonical): its target resolved when it
/// can be (a chain of links, a folder link above), else lexically from where the link sits.
std::optional<LinkOut> leads_out(const FileSystem& fs, const fs::path& root, const fs::path& link) {
  fs::path target;
  if (auto real = fs.canonical(link)) {
    target = *real;
  } else if (auto written = fs.read_symlink(link)) {
    target = written->is_absolute() ? *written : (link.parent_path() / *written).lexically_normal();
  } else {
    return std::nullopt;
  }
  if (is_within(target, root)) return std::nullopt;
  return LinkOut{link, target};
}

std::optional<LinkOut> walk_links(const FileSystem& fs, const fs::path& root, const fs::path& dir, int depth) {
  if (depth > 256) return std::nullopt;  // deeper than any tree: nothing of it is followed anyway
  auto names = fs.list_directory(dir);
  if (!names) return std::nullopt;
  for (const auto& n : *names) {
    const fs::path p = dir / n;
    switch (fs.type_of(p)) {
      case FileType::symlink:
        if (auto out = leads_out(fs, root, p)) return out;
        break;
      case FileType::directory:
        if (auto out = walk_links(fs, root, p, depth + 1)) return out;
        break;
      default: break;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<LinkOut> link_out_on_path(const FileSystem& fs, const fs::path& root_in, const fs::path& path) {
  const fs::path root = fs.canonical(root_in).value_or(root_in.lexically_normal());
  const fs::path rel = path.lexically_normal().lexically_relative(root_in.lexically_normal());
  if (rel.empty() || *rel.begin() == "..") return std::nullopt;
  fs::path at = root_in;
  for (const auto& part : rel) {
    if (part == ".") continue;
    at /= part;
    if (fs.type_of(at) == FileType::symlink)
      if (auto out = leads_out(fs, root, at)) return out;
  }
  return std::nullopt;
}

std::optional<LinkOut> link_out_in_tree(const FileSystem& fs, const fs::path& root_in) {
  const fs::path root = fs.canonical(root_in).value_or(root_in.lexically_normal());
  return walk_links(fs, root, root_in, 0);
}

std::uint64_t tree_bytes(const FileSystem& fs, const fs::path& path) {
  switch (fs.type_of(path)) {
    case FileType::directory: {
      std::uint64_t total = 0;
      if (auto names = fs.list_directory(path))
        for (auto& n : *names) total += tree_bytes(fs, path / n);
      return total;
    }
    case FileType::regular: {
      auto st = fs.stamp(path);
      return st ? st->size : 0;
    }
    default: return 0;
  }
}

fs::path size_file(const fs::path& entry) { return entry.parent_path() / ("." + entry.filename().string() + ".bytes"); }

Status record_size(FileSystem& fs, const fs::path& entry, std::uint64_t bytes) {
  return fs.write_file_atomic(size_file(entry), std::to_string(bytes) + "\n");
}

std::optional<std::uint64_t> recorded_size(const FileSystem& fs, const fs::path& entry) {
  auto text = fs.read_file(size_file(entry), 4096);  // a number and a line break
  if (!text || text->size() > 32) return std::nullopt;
  std::string_view t = *text;
  if (t.ends_with('\n')) t.remove_suffix(1);
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return n;
}

Status check_cache_dir(const FileSystem& fs, const Environment& env) {
  auto v = env.get("OPFORGE_CACHE_DIR");
  if (!v || v->empty()) return {};
  const std::string shown = "OPFORGE_CACHE_DIR='" + strings::cut(*v) + "'";
  const char* hint = "name a folder (it is made when missing), or unset it to use ~/.cache/opforge";
  if (v->find('\0') != std::string::npos) return bad_input(shown + " contains a NUL character", hint);
  // Each step that cannot hold a folder (a file, a device, a dangling link) is the user's mistake,
  // and a cache that then fails quietly at every write is no cache at all.
  fs::path so_far;
  for (const auto& part : fs::path(*v)) {
    so_far /= part;
    if (part == "/" || part == "." || part == "..") continue;
    switch (fs.resolved_type(so_far)) {
      case FileType::none:
        if (fs.type_of(so_far) == FileType::symlink)
          return bad_input(shown + ": " + strings::cut(so_far.string()) + " is a dangling symbolic link", hint);
        return {};  // made when first used
      case FileType::directory: continue;
      case FileType::regular:
        return bad_input(shown + " is not a folder: " + strings::cut(so_far.string()) + " is a file", hint);
      default:
        return bad_input(shown + " is not a folder: " + strings::cut(so_far.string()) + " is a device, socket or FIFO",
                         hint);
    }
  }
  return {};
}

}  // namespace opforge::probe
