#pragma once
/// The only door to the machine. Every stage reaches files, processes, the environment and the
/// dynamic loader through these interfaces, so that tests can hand it a fake world.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/error.h"

namespace opforge::probe {

namespace fs = std::filesystem;

enum class FileType { none, regular, directory, symlink, other };

/// Enough to tell that a file changed (probe cache keys, incremental builds).
struct FileStamp {
  std::uintmax_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t inode = 0;
  bool operator==(const FileStamp&) const = default;
};

/// A lock's handle: the lock lasts as long as the handle does.
using LockHandle = std::shared_ptr<void>;
/// A lock attempt that could be made: the handle, or nullopt when another process holds the lock.
using LockAttempt = std::optional<LockHandle>;

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  /// Type of `path` itself (a symlink is reported as symlink, not followed).
  virtual FileType type_of(const fs::path& path) const = 0;
  /// Type after following symlinks; none when missing or dangling.
  virtual FileType resolved_type(const fs::path& path) const = 0;
  virtual bool is_executable(const fs::path& path) const = 0;
  /// Names (not paths) of the entries of a directory, sorted.
  virtual Result<std::vector<std::string>> list_directory(const fs::path& path) const = 0;
  virtual Result<fs::path> read_symlink(const fs::path& path) const = 0;
  /// Absolute path with every symlink resolved.
  virtual Result<fs::path> canonical(const fs::path& path) const = 0;
  virtual std::optional<FileStamp> stamp(const fs::path& path) const = 0;
  /// `path` made absolute against the working directory, as std::filesystem::absolute (no symlink
  /// resolved, nothing need exist). The default suits fakes, whose working directory is "/".
  virtual fs::path absolute(const fs::path& path) const { return path.is_absolute() ? path : fs::path("/") / path; }
  /// read_file's default bound: far above any cache file, stamp, report, recipe or /proc file.
  static constexpr std::uint64_t kReadLimit = 64ull << 20;
  /// The one way opforge reads a file (SourceGuards.NoRawFileReadsOutsideProbe finds any other):
  /// a cache file, a tree it keeps, a recipe's folder, a report or a record may be anything, so
  /// the text only when `path`, after following symlinks, is a regular file of at most
  /// `max_bytes`. Never blocks on a FIFO and never reads a device (/dev/zero never ends). Errors
  /// name the file and why: bad_input "PATH: no such file", "PATH: is a FIFO, not a regular file",
  /// "PATH: is N bytes, more than the limit of M"; failed "cannot read PATH: <errno text>"
  /// otherwise (permission, I/O). Wheels, ELF files and toolkit wheels pass a larger bound.
  Result<std::string> read_file(const fs::path& path, std::uint64_t max_bytes = kReadLimit) const {
    return read_bounded(path, max_bytes);
  }
  /// Writes to a temporary file beside `path`, then renames: never half-written.
  virtual Status write_file_atomic(const fs::path& path, std::string_view content, unsigned mode = 0644) = 0;
  virtual Status create_directories(const fs::path& path) = 0;
  /// Appends `text` to `path` (created if missing) in one write, so that lines several processes
  /// append at once never interleave (a log). Fakes read and rewrite.
  virtual Status append_file(const fs::path& path, std::string_view text) {
    auto old = read_file(path);
    return write_file_atomic(path, (old ? *old : std::string()) + std::string(text));
  }
  /// Creates (or atomically replaces, when `path` is already a symlink) a symlink to `target`.
  virtual Status create_symlink(const fs::path& target, const fs::path& path) = 0;
  virtual Status rename(const fs::path& from, const fs::path& to) = 0;
  /// Removes a file or symlink (not a directory tree); missing is not an error.
  virtual Status remove(const fs::path& path) = 0;
  virtual Status remove_all(const fs::path& path) = 0;
  virtual Result<fs::path> make_temp_directory(std::string_view prefix) = 0;
  /// Takes an exclusive lock on `path` (created if missing) without waiting; the lock lasts as
  /// long as the returned handle. nullopt when another process holds it (the one case worth
  /// waiting for); an error when the lock cannot be taken at all (a read-only folder, no
  /// permission), which no waiting cures. Fakes always succeed.
  virtual Result<LockAttempt> try_lock(const fs::path& path) {
    (void)path;
    return LockAttempt(std::make_shared<int>(0));
  }
  /// A shared lock on `path` (created if missing) without waiting: any number of holders, none
  /// while someone holds the exclusive one (try_lock answers nullopt while shared holders exist).
  /// nullopt when the exclusive lock is held; errors as try_lock. Fakes always succeed.
  virtual Result<LockAttempt> try_lock_shared(const fs::path& path) {
    (void)path;
    return LockAttempt(std::make_shared<int>(0));
  }
  /// Says once per file that a file opforge keeps (a cache file, a tree's stamp) could not be used
  /// and is made again (read_kept_file); the real machine writes "opforge: warning: ..." to
  /// stderr, fakes keep the lines (FakeFileSystem::notices).
  virtual void report_ignored(const fs::path& path, const std::string& why) const;

 protected:
  /// read_file's implementation: the real one checks the descriptor it opened (fstat), so that
  /// nothing can swap the file between a check and the read.
  virtual Result<std::string> read_bounded(const fs::path& path, std::uint64_t max_bytes) const = 0;
};

/// Reads a file opforge keeps for itself (cache files such as probes.json or compile-peaks.json, a
/// scratch tree's resume stamp): its text; nullopt when it is missing, or when it is not a regular
/// file within `max_bytes` or cannot be read, which fs.report_ignored says ("PATH: is a FIFO, not
/// a regular file: ignored and made again"). Such a file only saves time: its caller makes it
/// again, and it never fails a command.
std::optional<std::string> read_kept_file(const FileSystem& fs, const fs::path& path,
                                          std::uint64_t max_bytes = FileSystem::kReadLimit);

enum class Output {
  capture,  ///< collect stdout and stderr into the result
  inherit,  ///< the child writes to our stdout/stderr (e.g. ninja's progress)
  lines,    ///< each line of stdout+stderr goes to `on_line` and is also captured
};

struct Command {
  std::vector<std::string> argv;
  fs::path cwd{};                                           ///< empty: the current directory
  std::optional<std::map<std::string, std::string>> env{};  ///< the full environment; nullopt: inherit
  Output output = Output::capture;
  std::function<void(std::string_view)> on_line{};  ///< with Output::lines
  /// With Output::lines: stdout and stderr on a pseudo-terminal instead of a pipe, so that the
  /// command prints as to a terminal (ninja then reports each step as it starts, not only as it
  /// ends). No output translation: lines end in '\n' as in a pipe; a '\r' also ends one, and a line
  /// redrawn in place is passed on as soon as it ends with erase-to-end-of-line (ESC [ K). Where
  /// no pseudo-terminal can be opened (no /dev/pts in a container), a pipe as usual.
  bool terminal = false;
  std::optional<std::string> stdin_text{};
  std::chrono::milliseconds timeout{0};  ///< 0: none
};

struct ProcessResult {
  int exit_code = -1;  ///< -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  std::string out{};  ///< stdout (capture/lines)
  std::string err{};  ///< stderr (capture); merged into `out` with Output::lines
  /// The kernel's peak resident memory of the largest process of the command's tree that was
  /// waited for (ru_maxrss of the finished child), in KiB; 0 when unknown.
  long peak_rss_kib = 0;
  bool ok() const { return exit_code == 0; }
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  /// Runs argv[0] (looked up on the PATH of the child's environment when it has no '/').
  /// An error only when it could not be started; a non-zero exit is a ProcessResult.
  virtual Result<ProcessResult> run(const Command& command) = 0;
};

class Environment {
 public:
  virtual ~Environment() = default;
  /// The value, or nullopt when unset. (An empty value is returned as "".)
  virtual std::optional<std::string> get(const std::string& name) const = 0;
  virtual std::map<std::string, std::string> all() const = 0;
  virtual unsigned cpu_count() const = 0;
};

class DynamicLoader {
 public:
  virtual ~DynamicLoader() = default;
  /// Opens a library (dlopen semantics); nullptr when it cannot be loaded.
  virtual void* open(const std::string& name) = 0;
  virtual void* symbol(void* handle, const std::string& name) = 0;
  virtual void close(void* handle) = 0;
};

/// The world a stage sees.
struct Machine {
  FileSystem& fs;
  ProcessRunner& proc;
  Environment& env;
  DynamicLoader& dl;
};

/// The real machine (process-wide singletons).
Machine real_machine();

/// Test-only fault injection: when the environment has OPFORGE_TEST_STOP_AT=`point`, the process
/// SIGKILLs itself here, so that tests can stop a build exactly at a dangerous moment (between
/// two renames). Points: "wheel-written", "record-stashed", "wheel-renamed", "record-renamed".
void stop_here_for_tests(const Environment& env, std::string_view point);

/// Where opforge's own files are (recipes/, src/python/opforge_ops/, src/kernels/): the source
/// tree this binary was built from while it still holds them (a development build), else the
/// installed share/opforge folder.
fs::path data_dir(const FileSystem& fs);

/// The command that runs this opforge again, for scripts it writes: /proc/self/exe, or, when the
/// dynamic loader runs it (`ld-linux-x86-64.so.2 --library-path DIR …/opforge`, as inside a root:
/// root.cpp's self_argv), the loader, its options and the program from /proc/self/cmdline. Empty
/// when neither can be read.
std::vector<std::string> self_command(const FileSystem& fs);

/// opforge's cache folder (probe results, git clones, compiler wrappers): $OPFORGE_CACHE_DIR, else
/// $XDG_CACHE_HOME/opforge, else $HOME/.cache/opforge (relative values ignored); empty when none.
fs::path default_cache_dir(const Environment& env);
/// bad_input when OPFORGE_CACHE_DIR names something that cannot be a folder (a file, /dev/null, a
/// dangling link, a path through a file); a folder that is missing is fine (made when used).
Status check_cache_dir(const FileSystem& fs, const Environment& env);

/// The time a lock wait reads and sleeps on; tests hand a fake one that advances when slept on,
/// so they never sleep.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::steady_clock::time_point now() const = 0;
  virtual void sleep(std::chrono::milliseconds d) = 0;
};
/// steady_clock and this_thread::sleep_for.
Clock& real_clock();

/// How a lock is waited for. Each caller keeps its own bound: the toolkit and environment locks
/// 250 ms / 2 h (a provisioning or a pip install may take that long), a scratch tree's 1 s / 4 h
/// (a whole command build), dist/'s 50 ms / 10 min (a commit is quick).
struct LockWait {
  std::chrono::milliseconds poll{250};
  std::chrono::seconds limit = std::chrono::hours(2);
  std::function<void()> on_wait{};  ///< called once, when another process holds it; may be null
  std::string hint{};               ///< the hint when giving up; empty: "see which process holds it: fuser PATH"
  Clock* clock = nullptr;           ///< null: real_clock()
};

/// The one lock-waiting loop: calls `try_once` every `w.poll` until it gives a lock; failed
/// ("gave up waiting for PATH, held by another opforge process") once `w.limit` has passed. A lock
/// that cannot be taken at all (`try_once`'s error: EACCES, EROFS) is returned at once: only a
/// holder is waited for.
Result<LockHandle> wait_for(const fs::path& path, const LockWait& w,
                            const std::function<Result<LockAttempt>()>& try_once);

/// Waits for the exclusive lock on `path` (try_lock, through wait_for).
Result<std::shared_ptr<void>> wait_for_lock(FileSystem& fs, const fs::path& path, const LockWait& w);
/// The same for the shared lock (try_lock_shared).
Result<std::shared_ptr<void>> wait_for_shared_lock(FileSystem& fs, const fs::path& path, const LockWait& w);
/// 250 ms polls for at most `limit`, `on_wait` (may be null) told once.
Result<std::shared_ptr<void>> wait_for_lock(FileSystem& fs, const fs::path& path, const std::function<void()>& on_wait,
                                            std::chrono::seconds limit = std::chrono::hours(2));
Result<std::shared_ptr<void>> wait_for_shared_lock(FileSystem& fs, const fs::path& path,
                                                   const std::function<void()>& on_wait,
                                                   std::chrono::seconds limit = std::chrono::hours(2));

/// Bytes under `path` (files and symlinks' own sizes; symlinks not followed): a walk, for the
/// moment a cache entry is made, never for listing the cache.
std::uint64_t tree_bytes(const FileSystem& fs, const fs::path& path);

/// A cache entry's size file: `.<name>.bytes` beside it, written by the entry's owner when the
/// entry is committed, so that `opforge cache` and `doctor` say the cache's size without walking
/// gigabytes.
fs::path size_file(const fs::path& entry);
/// Writes `bytes` into `entry`'s size file (atomically).
Status record_size(FileSystem& fs, const fs::path& entry, std::uint64_t bytes);
/// The size `entry`'s size file holds; nullopt when there is none or it is damaged.
std::optional<std::uint64_t> recorded_size(const FileSystem& fs, const fs::path& entry);

/// Looks up `name` on a PATH-style list of folders; nullopt when absent.
std::optional<fs::path> find_on_path(const FileSystem& fs, std::string_view name, std::string_view path_list);

}  // namespace opforge::probe
