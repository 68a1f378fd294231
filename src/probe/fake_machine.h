#pragma once
/// Fakes of the probe interfaces for tests: an in-memory file system, a process runner answering
/// from a table and recording every command, a fixed environment, and a loader of fake symbols.
/// Tests that need real header texts use RealFileSystem over tests/fixtures instead.
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "probe/machine.h"

namespace opforge::probe {

class FakeFileSystem final : public FileSystem {
 public:
  struct Node {
    FileType type = FileType::regular;
    std::string content;  ///< file content, or the symlink target
    unsigned mode = 0644;
  };
  /// Adds a file (parents are created). `mode` 0755 makes it executable.
  void add_file(const fs::path& path, std::string content, unsigned mode = 0644);
  void add_directory(const fs::path& path);
  void add_symlink(const fs::path& path, const fs::path& target);
  /// Adds what is neither a file, a folder nor a link (a FIFO, a device): FileType::other.
  void add_special(const fs::path& path);
  const std::map<std::string, Node>& nodes() const { return nodes_; }
  /// The modification time stamp() reports for an existing node.
  void set_mtime(const fs::path& path, std::int64_t ns);
  /// Another process holds the lock file `path`: try_lock and try_lock_shared answer nullopt.
  void hold_lock(const fs::path& path) { held_.insert(path.lexically_normal().string()); }
  /// Paths written, symlinked or removed, in order ("write P", "symlink P -> T", "remove P", ...).
  const std::vector<std::string>& log() const { return log_; }
  /// What report_ignored was told, in order ("PATH: is not a regular file: ignored and made again").
  const std::vector<std::string>& notices() const { return notices_; }

  FileType type_of(const fs::path& path) const override;
  FileType resolved_type(const fs::path& path) const override;
  bool is_executable(const fs::path& path) const override;
  void report_ignored(const fs::path& path, const std::string& why) const override;
  Result<std::vector<std::string>> list_directory(const fs::path& path) const override;
  Result<fs::path> read_symlink(const fs::path& path) const override;
  Result<fs::path> canonical(const fs::path& path) const override;
  std::optional<FileStamp> stamp(const fs::path& path) const override;
  Status write_file_atomic(const fs::path& path, std::string_view content, unsigned mode) override;
  Status create_directories(const fs::path& path) override;
  Status create_symlink(const fs::path& target, const fs::path& path) override;
  Status rename(const fs::path& from, const fs::path& to) override;
  Status remove(const fs::path& path) override;
  Status remove_all(const fs::path& path) override;
  Result<fs::path> make_temp_directory(std::string_view prefix) override;
  Result<LockAttempt> try_lock(const fs::path& path) override;
  Result<LockAttempt> try_lock_shared(const fs::path& path) override { return try_lock(path); }

 protected:
  Result<std::string> read_bounded(const fs::path& path, std::uint64_t max_bytes) const override;

 private:
  mutable std::vector<std::string> notices_;
  std::set<std::string> held_;
  std::map<std::string, std::int64_t> mtimes_;  ///< set_mtime(); else the content's hash stands in
  std::optional<std::string> resolve(const fs::path& path, int depth = 0) const;
  std::map<std::string, Node> nodes_;
  std::vector<std::string> log_;
  int temp_counter_ = 0;
};

class FakeProcessRunner final : public ProcessRunner {
 public:
  /// Any command whose argv starts with `argv_prefix` gets `result`. Later entries win.
  void on(std::vector<std::string> argv_prefix, ProcessResult result);
  /// Every command run, in order.
  const std::vector<Command>& calls() const { return calls_; }
  Result<ProcessResult> run(const Command& command) override;

 private:
  std::vector<std::pair<std::vector<std::string>, ProcessResult>> table_;
  std::vector<Command> calls_;
  std::mutex mu_;  ///< commands may run from several threads (ops compiled at once)
};

class FakeEnvironment final : public Environment {
 public:
  explicit FakeEnvironment(std::map<std::string, std::string> vars = {}, unsigned cpus = 2)
      : vars_(std::move(vars)), cpus_(cpus) {}
  void set(const std::string& name, std::string value) { vars_[name] = std::move(value); }
  void unset(const std::string& name) { vars_.erase(name); }
  std::optional<std::string> get(const std::string& name) const override;
  std::map<std::string, std::string> all() const override { return vars_; }
  unsigned cpu_count() const override { return cpus_; }

 private:
  std::map<std::string, std::string> vars_;
  unsigned cpus_;
};

class FakeDynamicLoader final : public DynamicLoader {
 public:
  /// Makes `library` loadable, exporting `symbols`.
  void add_library(const std::string& library, std::map<std::string, void*> symbols);
  const std::vector<std::string>& opened() const { return opened_; }
  void* open(const std::string& name) override;
  void* symbol(void* handle, const std::string& name) override;
  void close(void*) override {}

 private:
  std::map<std::string, std::map<std::string, void*>> libraries_;
  std::vector<std::string> opened_;
};

/// A whole fake world; `machine()` hands out references to its parts.
struct FakeMachine {
  FakeFileSystem fs;
  FakeProcessRunner proc;
  FakeEnvironment env;
  FakeDynamicLoader dl;
  Machine machine() { return Machine{fs, proc, env, dl}; }
};

}  // namespace opforge::probe
