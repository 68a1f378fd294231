#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

#include "probe/machine.h"
#include "probe/overlay_environment.h"
#include "probe/real_process.h"

extern char** environ;

namespace opforge::probe {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

Error io_error(const std::string& what, const fs::path& path, int err) {
  return Error{ErrorKind::failed, what + " " + path.string() + ": " + errno_text(err), {}, {}};
}

/// Reads `fd` to its end and closes it; more than `max_bytes` is bad_input (a file that grew while
/// being read).
Result<std::string> read_to_end(int fd, const fs::path& path, std::uint64_t max_bytes, std::size_t expect = 0) {
  std::string out;
  out.reserve(expect);
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return opforge::unexpected(io_error("cannot read", path, err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      ::close(fd);
      return bad_input(path.string() + ": is more than the limit of " + std::to_string(max_bytes) + " bytes");
    }
  }
  ::close(fd);
  return out;
}

FileType to_type(const fs::file_status& st) {
  switch (st.type()) {
    case fs::file_type::not_found:
    case fs::file_type::none: return FileType::none;
    case fs::file_type::regular: return FileType::regular;
    case fs::file_type::directory: return FileType::directory;
    case fs::file_type::symlink: return FileType::symlink;
    default: return FileType::other;
  }
}

std::string random_suffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}() ^ static_cast<unsigned long>(::getpid())};
  static const char* hex = "0123456789abcdef";
  std::string s;
  auto v = rng();
  for (int i = 0; i < 12; ++i, v >>= 4) s += hex[v & 15];
  return s;
}

/// A hidden temporary name beside `path`: in the same folder, so that renaming it over `path` is atomic.
fs::path temp_beside(const fs::path& path) {
  auto dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  return dir / ("." + path.filename().string() + ".tmp-" + random_suffix());
}

/// Renames `tmp` over `path`; when that fails, `tmp` is removed and the error names `path`.
Status rename_into_place(const fs::path& tmp, const fs::path& path, const std::string& what) {
  if (::rename(tmp.c_str(), path.c_str()) == 0) return {};
  int err = errno;
  ::unlink(tmp.c_str());
  return opforge::unexpected(io_error(what, path, err));
}

class RealFileSystem final : public FileSystem {
 public:
  FileType type_of(const fs::path& path) const override {
    std::error_code ec;
    return to_type(fs::symlink_status(path, ec));
  }
  FileType resolved_type(const fs::path& path) const override {
    std::error_code ec;
    return to_type(fs::status(path, ec));
  }
  bool is_executable(const fs::path& path) const override {
    return resolved_type(path) == FileType::regular && ::access(path.c_str(), X_OK) == 0;
  }

 protected:
  Result<std::string> read_bounded(const fs::path& path, std::uint64_t max_bytes) const override {
    // O_NONBLOCK: opening a FIFO with no writer would wait forever; the type check below refuses
    // it (and devices such as /dev/zero, which never end) on the descriptor actually opened.
    // Symlinks are followed (a cache folder or a tree may be linked), and the descriptor is what
    // is checked: the file a link leads to is the one whose type and size decide.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
      int err = errno;
      if (err == ENOENT || err == ENOTDIR) return bad_input(path.string() + ": no such file");
      if (err == ELOOP) return bad_input(path.string() + ": is a symbolic link loop, not a regular file");
      return opforge::unexpected(io_error("cannot read", path, err));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return opforge::unexpected(io_error("cannot read", path, err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                         : S_ISFIFO(st.st_mode) ? "a FIFO"
                         : S_ISCHR(st.st_mode)  ? "a character device"
                         : S_ISBLK(st.st_mode)  ? "a block device"
                         : S_ISSOCK(st.st_mode) ? "a socket"
                                                : "not a regular file";
      return bad_input(path.string() + ": is " + what + ", not a regular file");
    }
    if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
      ::close(fd);
      return bad_input(path.string() + ": is " + std::to_string(st.st_size) + " bytes, more than the limit of " +
                       std::to_string(max_bytes));
    }
    // A regular file read with O_NONBLOCK reads as usual; clear it anyway for files on
    // filesystems that honour it (FUSE).
    if (int flags = ::fcntl(fd, F_GETFL); flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return read_to_end(fd, path, max_bytes, static_cast<std::size_t>(st.st_size));
  }

 public:
  Result<std::vector<std::string>> list_directory(const fs::path& path) const override {
    std::error_code ec;
    std::vector<std::string> names;
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
      names.push_back(it->path().filename().string());
    if (ec) return opforge::unexpected(io_error("cannot list", path, ec.value()));
    std::sort(names.begin(), names.end());
    return names;
  }
  Result<fs::path> read_symlink(const fs::path& path) const override {
    std::error_code ec;
    auto target = fs::read_symlink(path, ec);
    if (ec) return opforge::unexpected(io_error("cannot read link", path, ec.value()));
    return target;
  }
  fs::path absolute(const fs::path& path) const override {
    std::error_code ec;
    auto p = fs::absolute(path, ec);
    return ec ? path : p;
  }
  Result<fs::path> canonical(const fs::path& path) const override {
    std::error_code ec;
    auto p = fs::canonical(path, ec);
    if (ec) return opforge::unexpected(io_error("cannot resolve", path, ec.value()));
    return p;
  }
  std::optional<FileStamp> stamp(const fs::path& path) const override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return FileStamp{static_cast<std::uintmax_t>(st.st_size),
                     static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                     static_cast<std::uint64_t>(st.st_ino)};
  }
  Status write_file_atomic(const fs::path& path, std::string_view content, unsigned mode) override {
    auto tmp = temp_beside(path);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return opforge::unexpected(io_error("cannot write", tmp, errno));
    size_t done = 0;
    while (done < content.size()) {
      ssize_t n = ::write(fd, content.data() + done, content.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        int err = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        return opforge::unexpected(io_error("cannot write", tmp, err));
      }
      done += static_cast<size_t>(n);
    }
    // fsync so that a crash after the rename cannot leave an empty file under the final name.
    if (::fchmod(fd, mode) != 0 || ::fsync(fd) != 0 || ::close(fd) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return opforge::unexpected(io_error("cannot write", tmp, err));
    }
    return rename_into_place(tmp, path, "cannot rename into");
  }
  Status append_file(const fs::path& path, std::string_view text) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return opforge::unexpected(io_error("cannot append to", path, errno));
    ssize_t n;
    do n = ::write(fd, text.data(), text.size());
    while (n < 0 && errno == EINTR);
    const int err = n < 0 ? errno : 0;
    ::close(fd);
    if (n < 0) return opforge::unexpected(io_error("cannot append to", path, err));
    return {};
  }
  Status create_directories(const fs::path& path) override {
    std::error_code ec;
    fs::create_directories(path, ec);
    if (!ec) return {};
    // "File exists" for a dangling link (dist -> /mnt/gone) names neither the link nor its target.
    fs::path so_far;
    for (const auto& part : path) {
      so_far /= part;
      struct stat st {};
      if (::lstat(so_far.c_str(), &st) == 0 && S_ISLNK(st.st_mode) && ::stat(so_far.c_str(), &st) != 0) {
        const int err = errno;
        std::error_code lec;
        const auto target = fs::read_symlink(so_far, lec);
        return opforge::unexpected(Error{ErrorKind::failed,
                                         "cannot create directory " + path.string() + ": " + so_far.string() +
                                             " is a symbolic link to " + (lec ? "?" : target.string()) + ", " +
                                             (err == ELOOP ? "a loop of links" : "which does not exist"),
                                         "create the folder it points to, or remove the link",
                                         {}});
      }
    }
    return opforge::unexpected(io_error("cannot create directory", path, ec.value()));
  }
  Status create_symlink(const fs::path& target, const fs::path& path) override {
    auto tmp = temp_beside(path);
    if (::symlink(target.c_str(), tmp.c_str()) != 0)
      return opforge::unexpected(io_error("cannot create symlink", tmp, errno));
    return rename_into_place(tmp, path, "cannot create symlink");
  }
  Status rename(const fs::path& from, const fs::path& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0)
      return opforge::unexpected(io_error("cannot rename " + from.string() + " to", to, errno));
    return {};
  }
  Status remove(const fs::path& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return opforge::unexpected(io_error("cannot remove", path, errno));
    return {};
  }
  Status remove_all(const fs::path& path) override {
    std::error_code ec;
    fs::remove_all(path, ec);
    if (ec) return opforge::unexpected(io_error("cannot remove", path, ec.value()));
    return {};
  }
  Result<fs::path> make_temp_directory(std::string_view prefix) override {
    const char* tmpdir = std::getenv("TMPDIR");
    std::string templ =
        (tmpdir && *tmpdir ? std::string(tmpdir) : std::string("/tmp")) + "/" + std::string(prefix) + "XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) return opforge::unexpected(io_error("cannot create", templ, errno));
    return fs::path(buf.data());
  }
  Result<LockAttempt> try_lock_shared(const fs::path& path) override { return lock_file(path, LOCK_SH); }
  Result<LockAttempt> try_lock(const fs::path& path) override { return lock_file(path, LOCK_EX); }

 private:
  // Only EWOULDBLOCK means "held": EACCES, EROFS, ENOENT and the rest say the lock cannot be taken
  // at all, and waiting would only hide that (a read-only dist/ looked like a busy one).
  static Result<LockAttempt> lock_file(const fs::path& path, int how) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return opforge::unexpected(io_error("cannot open the lock file", path, errno));
    if (::flock(fd, how | LOCK_NB) != 0) {
      int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK) return LockAttempt();
      return opforge::unexpected(io_error("cannot lock", path, err));
    }
    // The kernel drops the lock when the descriptor closes, also when we are killed.
    return LockAttempt(LockHandle(new int(fd), [](void* p) {
      auto* fdp = static_cast<int*>(p);
      ::close(*fdp);
      delete fdp;
    }));
  }
};

class RealEnvironment final : public Environment {
 public:
  std::optional<std::string> get(const std::string& name) const override {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  }
  std::map<std::string, std::string> all() const override {
    std::map<std::string, std::string> out;
    for (char** e = environ; e && *e; ++e) {
      std::string_view kv(*e);
      auto eq = kv.find('=');
      if (eq == std::string_view::npos) continue;
      out.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
    }
    return out;
  }
  unsigned cpu_count() const override {
    unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : n;
  }
};

class RealDynamicLoader final : public DynamicLoader {
 public:
  void* open(const std::string& name) override { return ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL); }
  void* symbol(void* handle, const std::string& name) override {
    return handle ? ::dlsym(handle, name.c_str()) : nullptr;
  }
  void close(void* handle) override {
    if (handle) ::dlclose(handle);
  }
};

}  // namespace

namespace {
std::vector<std::string>& kept_names() {
  static std::vector<std::string> names;
  return names;
}
}  // namespace

void keep_from_children(std::vector<std::string> names) { kept_names() = std::move(names); }

std::map<std::string, std::string> without_kept(std::map<std::string, std::string> env) {
  for (const auto& n : kept_names()) env.erase(n);
  return env;
}

Machine real_machine() {
  static RealFileSystem fs;
  static auto proc = make_real_process_runner(fs);
  static RealEnvironment env;
  // Every child gets the machine's environment explicitly (and argv[0] looked up on its PATH).
  static EnvironmentRunner children(*proc, env);
  static RealDynamicLoader dl;
  return Machine{fs, children, env, dl};
}

// OPFORGE_TEST_PAUSE_AT=`point` SIGSTOPs the process there instead (the test sends SIGCONT), so
// that a test can run a second build while the first is inside its commit.
void stop_here_for_tests(const Environment& env, std::string_view point) {
  if (env.get("OPFORGE_TEST_STOP_AT") == std::optional<std::string>(std::string(point))) ::kill(::getpid(), SIGKILL);
  if (env.get("OPFORGE_TEST_PAUSE_AT") == std::optional<std::string>(std::string(point))) ::kill(::getpid(), SIGSTOP);
}

std::optional<fs::path> find_on_path(const FileSystem& fs, std::string_view name, std::string_view path_list) {
  size_t start = 0;
  while (start <= path_list.size()) {
    size_t end = path_list.find(':', start);
    if (end == std::string_view::npos) end = path_list.size();
    std::string_view dir = path_list.substr(start, end - start);
    if (!dir.empty()) {
      fs::path candidate = fs::path(std::string(dir)) / std::string(name);
      if (fs.is_executable(candidate)) return candidate;
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace opforge::probe
