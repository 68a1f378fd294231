#include "compiler/host.h"

#include "util/strings.h"

namespace opforge::compiler {

Invocation invocation(const HostChoice& c) {
  Invocation out;
  if (c.shim_dir) {
    const bool clang = c.compiler.family == Family::clang;
    out.cc = *c.shim_dir / (clang ? "cc" : "gcc");
    out.cxx = *c.shim_dir / (clang ? "c++" : "g++");
    out.ccbin = *c.shim_dir;
    out.needs_shim = true;
  } else {
    out.cc = c.compiler.cc;
    out.cxx = c.compiler.cxx;
    out.ccbin = c.compiler.cxx;
  }
  return out;
}

Result<std::map<std::string, std::string>> environment(const HostChoice& c, const std::string& path) {
  const Invocation via = invocation(c);
  std::map<std::string, std::string> env{{"CC", via.cc.string()}, {"CXX", via.cxx.string()}};
  if (!via.needs_shim) return env;
  // The shim's folder (in the build or cache folder) goes first on PATH, where ':' separates
  // folders: a folder with ':' would put a truncated one there and find the wrong compiler.
  if (via.ccbin.string().find(':') != std::string::npos)
    return bad_input("the compiler shim's folder '" + strings::cut(via.ccbin.string()) +
                         "' contains ':', which cannot stand in PATH (':' separates its folders)",
                     "set [build] build_dir to a folder without ':'");
  env["PATH"] = via.ccbin.string() + (path.empty() ? "" : ":" + path);
  return env;
}

Status check_shim(const probe::FileSystem& fs, const HostChoice& c) {
  const Invocation via = invocation(c);
  if (!via.needs_shim || fs.type_of(via.cxx) != probe::FileType::none) return {};
  return failure("internal: the compiler shim " + via.ccbin.string() + " has no " + via.cxx.filename().string() +
                 ": compiler::ensure_shim makes it before a backend runs");
}

std::string stamp(const probe::FileSystem& fs, const fs::path& exe) {
  auto real = fs.canonical(exe);
  if (!real) return "";
  auto st = fs.stamp(*real);
  if (!st) return real->string();
  return real->string() + " " + std::to_string(st->size) + " " + std::to_string(st->mtime_ns);
}

Status write_script(probe::FileSystem& fs, const fs::path& path, const std::string& text) {
  if (auto have = fs.read_file(path); have && *have == text && fs.is_executable(path)) return {};
  if (fs.resolved_type(path.parent_path()) != probe::FileType::directory)
    OPFORGE_CHECK(fs.create_directories(path.parent_path()));
  if (fs.type_of(path) == probe::FileType::symlink) OPFORGE_CHECK(fs.remove(path));
  return fs.write_file_atomic(path, text, 0755);
}

}  // namespace opforge::compiler
