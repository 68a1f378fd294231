#include "probe/fake_machine.h"

#include <algorithm>

namespace opforge::probe {
namespace {

std::string norm(const fs::path& p) {
  auto s = p.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

Error missing(const fs::path& p) {
  return Error{ErrorKind::failed, "no such file or directory: " + p.string(), {}, {}};
}

}  // namespace

void FakeFileSystem::add_directory(const fs::path& path) {
  fs::path cur;
  for (const auto& part : fs::path(norm(path))) {
    cur /= part;
    auto key = norm(cur);
    if (!nodes_.count(key)) nodes_[key] = Node{FileType::directory, {}, 0755};
  }
}

void FakeFileSystem::add_file(const fs::path& path, std::string content, unsigned mode) {
  add_directory(fs::path(norm(path)).parent_path());
  nodes_[norm(path)] = Node{FileType::regular, std::move(content), mode};
}

void FakeFileSystem::add_symlink(const fs::path& path, const fs::path& target) {
  add_directory(fs::path(norm(path)).parent_path());
  nodes_[norm(path)] = Node{FileType::symlink, target.string(), 0777};
}

void FakeFileSystem::add_special(const fs::path& path) {
  add_directory(fs::path(norm(path)).parent_path());
  nodes_[norm(path)] = Node{FileType::other, {}, 0644};
}

std::optional<std::string> FakeFileSystem::resolve(const fs::path& path, int depth) const {
  if (depth > 40) return std::nullopt;
  // Resolve symlinks component by component, like the kernel does.
  fs::path cur;
  fs::path p(norm(path));
  for (auto it = p.begin(); it != p.end(); ++it) {
    cur /= *it;
    auto found = nodes_.find(norm(cur));
    if (found == nodes_.end()) {
      if (cur == "/") continue;
      return std::nullopt;
    }
    if (found->second.type == FileType::symlink) {
      fs::path target(found->second.content);
      fs::path base = target.is_absolute() ? target : cur.parent_path() / target;
      auto resolved = resolve(base, depth + 1);
      if (!resolved) return std::nullopt;
      cur = *resolved;
    }
  }
  return norm(cur);
}

FileType FakeFileSystem::type_of(const fs::path& path) const {
  auto parent = resolve(fs::path(norm(path)).parent_path());
  if (!parent) return FileType::none;
  auto it = nodes_.find(norm(fs::path(*parent) / fs::path(norm(path)).filename()));
  return it == nodes_.end() ? FileType::none : it->second.type;
}

FileType FakeFileSystem::resolved_type(const fs::path& path) const {
  auto r = resolve(path);
  if (!r) return FileType::none;
  auto it = nodes_.find(*r);
  return it == nodes_.end() ? FileType::none : it->second.type;
}

bool FakeFileSystem::is_executable(const fs::path& path) const {
  auto r = resolve(path);
  if (!r) return false;
  auto it = nodes_.find(*r);
  return it != nodes_.end() && it->second.type == FileType::regular && (it->second.mode & 0111);
}

Result<std::string> FakeFileSystem::read_bounded(const fs::path& path, std::uint64_t max_bytes) const {
  // The real one's contract and messages: regular files only, within the bound.
  auto r = resolve(path);
  auto it = r ? nodes_.find(*r) : nodes_.end();
  if (it == nodes_.end()) return bad_input(path.string() + ": no such file");
  if (it->second.type == FileType::directory) return bad_input(path.string() + ": is a directory, not a regular file");
  if (it->second.type != FileType::regular) return bad_input(path.string() + ": is not a regular file");
  if (it->second.content.size() > max_bytes)
    return bad_input(path.string() + ": is " + std::to_string(it->second.content.size()) +
                     " bytes, more than the limit of " + std::to_string(max_bytes));
  return it->second.content;
}

void FakeFileSystem::report_ignored(const fs::path& path, const std::string& why) const {
  (void)path;
  notices_.push_back(why + ": ignored and made again");
}

Result<std::vector<std::string>> FakeFileSystem::list_directory(const fs::path& path) const {
  auto r = resolve(path);
  if (!r || resolved_type(*r) != FileType::directory) return opforge::unexpected(missing(path));
  std::vector<std::string> names;
  std::string prefix = *r == "/" ? "/" : *r + "/";
  for (auto& [key, node] : nodes_) {
    if (key.size() <= prefix.size() || key.compare(0, prefix.size(), prefix) != 0) continue;
    auto rest = key.substr(prefix.size());
    if (rest.find('/') == std::string::npos) names.push_back(rest);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<fs::path> FakeFileSystem::read_symlink(const fs::path& path) const {
  auto it = nodes_.find(norm(path));
  if (it == nodes_.end() || it->second.type != FileType::symlink) return opforge::unexpected(missing(path));
  return fs::path(it->second.content);
}

Result<fs::path> FakeFileSystem::canonical(const fs::path& path) const {
  auto r = resolve(path);
  if (!r || !nodes_.count(*r)) return opforge::unexpected(missing(path));
  return fs::path(*r);
}

std::optional<FileStamp> FakeFileSystem::stamp(const fs::path& path) const {
  auto r = resolve(path);
  if (!r) return std::nullopt;
  auto it = nodes_.find(*r);
  if (it == nodes_.end()) return std::nullopt;
  return FileStamp{
      it->second.content.size(),
      mtimes_.count(*r) ? mtimes_.at(*r) : static_cast<std::int64_t>(std::hash<std::string>{}(it->second.content)), 0};
}

void FakeFileSystem::set_mtime(const fs::path& path, std::int64_t ns) {
  if (auto r = resolve(path); r && nodes_.count(*r)) mtimes_[*r] = ns;
}

Result<LockAttempt> FakeFileSystem::try_lock(const fs::path& path) {
  if (held_.count(path.lexically_normal().string())) return LockAttempt();
  return LockAttempt(std::make_shared<int>(0));
}

Status FakeFileSystem::write_file_atomic(const fs::path& path, std::string_view content, unsigned mode) {
  if (resolved_type(fs::path(norm(path)).parent_path()) != FileType::directory)
    return opforge::unexpected(missing(fs::path(norm(path)).parent_path()));
  nodes_[norm(path)] = Node{FileType::regular, std::string(content), mode};
  log_.push_back("write " + norm(path));
  return {};
}

Status FakeFileSystem::create_directories(const fs::path& path) {
  add_directory(path);
  log_.push_back("mkdir " + norm(path));
  return {};
}

Status FakeFileSystem::create_symlink(const fs::path& target, const fs::path& path) {
  if (resolved_type(fs::path(norm(path)).parent_path()) != FileType::directory)
    return opforge::unexpected(missing(fs::path(norm(path)).parent_path()));
  nodes_[norm(path)] = Node{FileType::symlink, target.string(), 0777};
  log_.push_back("symlink " + norm(path) + " -> " + target.string());
  return {};
}

Status FakeFileSystem::rename(const fs::path& from, const fs::path& to) {
  auto it = nodes_.find(norm(from));
  if (it == nodes_.end()) return opforge::unexpected(missing(from));
  nodes_[norm(to)] = it->second;
  nodes_.erase(norm(from));
  // A folder takes what is in it along, as rename(2) does.
  const std::string inside = norm(from) + "/";
  for (auto child = nodes_.lower_bound(inside); child != nodes_.end() && child->first.starts_with(inside);) {
    nodes_[norm(to) + "/" + child->first.substr(inside.size())] = child->second;
    child = nodes_.erase(child);
  }
  log_.push_back("rename " + norm(from) + " -> " + norm(to));
  return {};
}

Status FakeFileSystem::remove(const fs::path& path) {
  nodes_.erase(norm(path));
  log_.push_back("remove " + norm(path));
  return {};
}

Status FakeFileSystem::remove_all(const fs::path& path) {
  auto key = norm(path);
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    if (it->first == key || it->first.starts_with(key + "/")) it = nodes_.erase(it);
    else ++it;
  }
  log_.push_back("remove_all " + key);
  return {};
}

Result<fs::path> FakeFileSystem::make_temp_directory(std::string_view prefix) {
  auto p = fs::path("/tmp") / (std::string(prefix) + std::to_string(++temp_counter_));
  add_directory(p);
  return p;
}

void FakeProcessRunner::on(std::vector<std::string> argv_prefix, ProcessResult result) {
  table_.emplace_back(std::move(argv_prefix), std::move(result));
}

Result<ProcessResult> FakeProcessRunner::run(const Command& command) {
  std::lock_guard lock(mu_);
  calls_.push_back(command);
  for (auto it = table_.rbegin(); it != table_.rend(); ++it) {
    auto& prefix = it->first;
    if (prefix.size() <= command.argv.size() && std::equal(prefix.begin(), prefix.end(), command.argv.begin())) {
      if (command.output == Output::lines && command.on_line) {
        std::string_view rest = it->second.out;
        while (!rest.empty()) {
          auto pos = rest.find('\n');
          command.on_line(rest.substr(0, pos));
          if (pos == std::string_view::npos) break;
          rest.remove_prefix(pos + 1);
        }
      }
      return it->second;
    }
  }
  return failure("cannot run '" + (command.argv.empty() ? std::string() : command.argv[0]) + "': not found on PATH");
}

std::optional<std::string> FakeEnvironment::get(const std::string& name) const {
  auto it = vars_.find(name);
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

void FakeDynamicLoader::add_library(const std::string& library, std::map<std::string, void*> symbols) {
  libraries_[library] = std::move(symbols);
}

void* FakeDynamicLoader::open(const std::string& name) {
  opened_.push_back(name);
  auto it = libraries_.find(name);
  return it == libraries_.end() ? nullptr : &it->second;
}

void* FakeDynamicLoader::symbol(void* handle, const std::string& name) {
  if (!handle) return nullptr;
  auto* symbols = static_cast<std::map<std::string, void*>*>(handle);
  auto it = symbols->find(name);
  return it == symbols->end() ? nullptr : it->second;
}

}  // namespace opforge::probe
