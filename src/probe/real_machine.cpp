#include <limits>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "probe/machine.h"

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
      return std::unexpected(io_error("cannot read", path, err));
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
  static thread_local std::mt19937_64 rng{std::random_device{}() ^
                                         static_cast<unsigned long>(::getpid())};
  static const char* hex = "0123456789abcdef";
  std::string s;
  auto v = rng();
  for (int i = 0; i < 12; ++i, v >>= 4) s += hex[v & 15];
  return s;
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
  Result<std::string> read_file(const fs::path& path) const override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::unexpected(io_error("cannot read", path, errno));
    return read_to_end(fd, path, std::numeric_limits<std::uint64_t>::max());
  }
  Result<std::string> read_regular_file(const fs::path& path, std::uint64_t max_bytes) const override {
    // O_NONBLOCK: opening a FIFO with no writer would wait forever; the type check below refuses
    // it (and devices such as /dev/zero, which never end) on the descriptor actually opened.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
      int err = errno;
      if (err == ENOENT || err == ENOTDIR) return bad_input(path.string() + ": no such file");
      return std::unexpected(io_error("cannot read", path, err));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return std::unexpected(io_error("cannot read", path, err));
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
      return bad_input(path.string() + ": is " + std::to_string(st.st_size) +
                       " bytes, more than the limit of " + std::to_string(max_bytes));
    }
    return read_to_end(fd, path, max_bytes, static_cast<std::size_t>(st.st_size));
  }
  Result<std::vector<std::string>> list_directory(const fs::path& path) const override {
    std::error_code ec;
    std::vector<std::string> names;
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
      names.push_back(it->path().filename().string());
    if (ec) return std::unexpected(io_error("cannot list", path, ec.value()));
    std::sort(names.begin(), names.end());
    return names;
  }
  Result<fs::path> read_symlink(const fs::path& path) const override {
    std::error_code ec;
    auto target = fs::read_symlink(path, ec);
    if (ec) return std::unexpected(io_error("cannot read link", path, ec.value()));
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
    if (ec) return std::unexpected(io_error("cannot resolve", path, ec.value()));
    return p;
  }
  std::optional<FileStamp> stamp(const fs::path& path) const override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return FileStamp{static_cast<std::uintmax_t>(st.st_size),
                     static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                     static_cast<std::uint64_t>(st.st_ino)};
  }
  Status write_file_atomic(const fs::path& path, std::string_view content,
                           unsigned mode) override {
    auto dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    auto tmp = dir / ("." + path.filename().string() + ".tmp-" + random_suffix());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return std::unexpected(io_error("cannot write", tmp, errno));
    size_t done = 0;
    while (done < content.size()) {
      ssize_t n = ::write(fd, content.data() + done, content.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        int err = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        return std::unexpected(io_error("cannot write", tmp, err));
      }
      done += static_cast<size_t>(n);
    }
    // fsync so that a crash after the rename cannot leave an empty file under the final name.
    if (::fchmod(fd, mode) != 0 || ::fsync(fd) != 0 || ::close(fd) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return std::unexpected(io_error("cannot write", tmp, err));
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return std::unexpected(io_error("cannot rename into", path, err));
    }
    return {};
  }
  Status create_directories(const fs::path& path) override {
    std::error_code ec;
    fs::create_directories(path, ec);
    if (ec) return std::unexpected(io_error("cannot create directory", path, ec.value()));
    return {};
  }
  Status create_symlink(const fs::path& target, const fs::path& path) override {
    auto tmp = path.parent_path() / ("." + path.filename().string() + ".tmp-" + random_suffix());
    if (::symlink(target.c_str(), tmp.c_str()) != 0)
      return std::unexpected(io_error("cannot create symlink", tmp, errno));
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return std::unexpected(io_error("cannot create symlink", path, err));
    }
    return {};
  }
  Status rename(const fs::path& from, const fs::path& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0)
      return std::unexpected(io_error("cannot rename " + from.string() + " to", to, errno));
    return {};
  }
  Status remove(const fs::path& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return std::unexpected(io_error("cannot remove", path, errno));
    return {};
  }
  Status remove_all(const fs::path& path) override {
    std::error_code ec;
    fs::remove_all(path, ec);
    if (ec) return std::unexpected(io_error("cannot remove", path, ec.value()));
    return {};
  }
  Result<fs::path> make_temp_directory(std::string_view prefix) override {
    const char* tmpdir = std::getenv("TMPDIR");
    std::string templ = (tmpdir && *tmpdir ? std::string(tmpdir) : std::string("/tmp")) + "/" +
                        std::string(prefix) + "XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) return std::unexpected(io_error("cannot create", templ, errno));
    return fs::path(buf.data());
  }
  Result<std::shared_ptr<void>> try_lock(const fs::path& path) override {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return std::unexpected(io_error("cannot open lock", path, errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK)
        return failure("another opforge build is running in " + path.parent_path().string() +
                       " (it holds " + path.filename().string() + ")",
                       "wait for it to finish, or build into another folder with --build-dir");
      return std::unexpected(io_error("cannot lock", path, err));
    }
    // The kernel drops the lock when the descriptor closes, also when we are killed.
    return std::shared_ptr<void>(new int(fd), [](void* p) {
      auto* fdp = static_cast<int*>(p);
      ::close(*fdp);
      delete fdp;
    });
  }
};

std::vector<char*> to_cstrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

class RealProcessRunner final : public ProcessRunner {
 public:
  Result<ProcessResult> run(const Command& command) override {
    if (command.argv.empty()) return failure("empty command");
    std::vector<std::string> env_strings;
    if (command.env)
      for (auto& [k, v] : *command.env) env_strings.push_back(k + "=" + v);
    // Resolve argv[0] against the child's PATH so that a custom env is honoured.
    std::string exe = command.argv[0];
    if (exe.find('/') == std::string::npos) {
      std::string path_list;
      if (command.env) {
        auto it = command.env->find("PATH");
        if (it != command.env->end()) path_list = it->second;
      } else if (const char* p = std::getenv("PATH")) {
        path_list = p;
      }
      static RealFileSystem rfs;
      auto found = find_on_path(rfs, exe, path_list);
      if (!found)
        return failure("cannot run '" + exe + "': not found on PATH",
                       "install it or put its folder on PATH");
      exe = found->string();
    }

    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, in_pipe[2] = {-1, -1};
    bool capture = command.output != Output::inherit;
    if (capture && (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0))
      return failure(std::string("pipe: ") + errno_text(errno));
    if (command.stdin_text && ::pipe2(in_pipe, O_CLOEXEC) != 0)
      return failure(std::string("pipe: ") + errno_text(errno));

    auto argv = to_cstrings(command.argv);
    auto envp = to_cstrings(env_strings);
    const pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) return failure(std::string("fork: ") + errno_text(errno));
    if (pid == 0) {
      // The child is a watchdog that leads a new process group for the command and everything
      // it starts. When opforge dies, even by SIGKILL, the kernel sends the watchdog SIGTERM
      // (PR_SET_PDEATHSIG, tied to the forking thread: opforge runs commands from its main
      // thread) and it stops the command and the group. A parent-death signal on the command
      // alone would reach ninja but not the compilers ninja started.
      ::setpgid(0, 0);
      if (capture) {
        ::dup2(out_pipe[1], 1);
        ::dup2(command.output == Output::lines ? out_pipe[1] : err_pipe[1], 2);
      }
      if (command.stdin_text) {
        ::dup2(in_pipe[0], 0);
      } else {
        int devnull = ::open("/dev/null", O_RDONLY);
        if (devnull >= 0) ::dup2(devnull, 0);
      }
      if (!command.cwd.empty() && ::chdir(command.cwd.c_str()) != 0) {
        std::string msg = "cannot enter " + command.cwd.string() + ": " + errno_text(errno) + "\n";
        (void)!::write(2, msg.data(), msg.size());
        ::_exit(127);
      }
      // The watchdog never execs, so O_CLOEXEC does not close these: a write end it kept would
      // keep the command's stdin open forever.
      for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], in_pipe[0], in_pipe[1]})
        if (fd > 2) ::close(fd);
      // SIGTERM (opforge died) and SIGCHLD (the command ended) are taken with sigwaitinfo, so
      // neither can slip in between a check and a wait.
      sigset_t watched, previous;
      sigemptyset(&watched);
      sigaddset(&watched, SIGTERM);
      sigaddset(&watched, SIGCHLD);
      ::sigprocmask(SIG_BLOCK, &watched, &previous);
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(128 + SIGKILL);  // opforge died before prctl
      pid_t cmd = ::fork();
      if (cmd == 0) {
        ::sigprocmask(SIG_SETMASK, &previous, nullptr);  // the mask survives exec
        if (command.env)
          ::execve(exe.c_str(), argv.data(), envp.data());
        else
          ::execv(exe.c_str(), argv.data());
        std::string msg = "cannot execute " + exe + ": " + errno_text(errno) + "\n";
        (void)!::write(2, msg.data(), msg.size());
        ::_exit(127);
      }
      if (cmd < 0) {
        std::string msg = "cannot execute " + exe + ": fork: " + errno_text(errno) + "\n";
        (void)!::write(2, msg.data(), msg.size());
        ::_exit(127);
      }
      // The watchdog holds no pipe ends: EOF on them means the command's side is closed.
      for (int fd = 0; fd <= 2; ++fd) ::close(fd);
      int st = 0;
      for (;;) {
        if (::waitpid(cmd, &st, WNOHANG) == cmd) break;
        siginfo_t info{};
        if (::sigwaitinfo(&watched, &info) != SIGTERM) continue;
        // opforge is gone. SIGTERM first: ninja answers it by signalling each job's own process
        // group (the compilers) and exiting; then SIGKILL for whatever is left in ours.
        ::kill(cmd, SIGTERM);
        for (int i = 0; i < 100 && ::waitpid(cmd, &st, WNOHANG) != cmd; ++i) ::usleep(20000);
        ::kill(0, SIGKILL);
      }
      if (WIFEXITED(st)) ::_exit(WEXITSTATUS(st));
      // Report the command's signal as our own.
      int sig = WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL;
      ::prctl(PR_SET_PDEATHSIG, 0);
      ::sigprocmask(SIG_SETMASK, &previous, nullptr);
      ::signal(sig, SIG_DFL);
      ::kill(::getpid(), sig);
      ::_exit(128 + sig);
    }
    ::setpgid(pid, pid);  // also here, so that a kill of the group below cannot come first

    ProcessResult result;
    if (command.stdin_text) {
      ::close(in_pipe[0]);
      // Small inputs only (probe sources); a large one would need polling alongside the reads.
      const std::string& text = *command.stdin_text;
      size_t done = 0;
      while (done < text.size()) {
        ssize_t n = ::write(in_pipe[1], text.data() + done, text.size() - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      ::close(in_pipe[1]);
    }
    auto deadline = std::chrono::steady_clock::now() + command.timeout;
    if (capture) {
      ::close(out_pipe[1]);
      ::close(err_pipe[1]);
      std::string pending;
      pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
      int open_fds = 2;
      char buf[65536];
      while (open_fds > 0) {
        int wait_ms = -1;
        if (command.timeout.count() > 0) {
          auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
              deadline - std::chrono::steady_clock::now());
          if (left.count() <= 0) {
            ::kill(-pid, SIGKILL);
            result.timed_out = true;
            break;
          }
          wait_ms = static_cast<int>(left.count());
        }
        int r = ::poll(fds, 2, wait_ms);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        for (int i = 0; i < 2; ++i) {
          if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
          ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
          if (n <= 0) {
            ::close(fds[i].fd);
            fds[i].fd = -1;
            --open_fds;
            continue;
          }
          std::string_view chunk(buf, static_cast<size_t>(n));
          if (i == 0) {
            result.out.append(chunk);
            if (command.output == Output::lines && command.on_line) {
              pending.append(chunk);
              size_t pos;
              while ((pos = pending.find('\n')) != std::string::npos) {
                command.on_line(std::string_view(pending).substr(0, pos));
                pending.erase(0, pos + 1);
              }
            }
          } else {
            result.err.append(chunk);
          }
        }
      }
      if (command.output == Output::lines && command.on_line && !pending.empty())
        command.on_line(pending);
      for (auto& f : fds)
        if (f.fd >= 0) ::close(f.fd);
    }
    int status = 0;
    for (;;) {
      pid_t w = ::waitpid(pid, &status, command.timeout.count() > 0 && !capture ? WNOHANG : 0);
      if (w == pid) break;
      if (w < 0 && errno == EINTR) continue;
      if (w == 0) {  // inherit mode with a timeout: poll the child
        if (std::chrono::steady_clock::now() >= deadline) {
          ::kill(-pid, SIGKILL);
          result.timed_out = true;
          ::waitpid(pid, &status, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      return failure(std::string("waitpid: ") + errno_text(errno));
    }
    if (WIFEXITED(status)) {
      result.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      result.exit_code = -1;
      result.signal = WTERMSIG(status);
    }
    if (result.exit_code == 127 && result.err.starts_with("cannot execute"))
      return failure(result.err.substr(0, result.err.find('\n')));
    return result;
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

Machine real_machine() {
  static RealFileSystem fs;
  static RealProcessRunner proc;
  static RealEnvironment env;
  static RealDynamicLoader dl;
  return Machine{fs, proc, env, dl};
}

// OPFORGE_TEST_PAUSE_AT=`point` SIGSTOPs the process there instead (the test sends SIGCONT), so
// that a test can run a second build while the first is inside its commit.
void stop_here_for_tests(const Environment& env, std::string_view point) {
  if (env.get("OPFORGE_TEST_STOP_AT") == std::optional<std::string>(std::string(point))) ::kill(::getpid(), SIGKILL);
  if (env.get("OPFORGE_TEST_PAUSE_AT") == std::optional<std::string>(std::string(point))) ::kill(::getpid(), SIGSTOP);
}

std::optional<fs::path> find_on_path(const FileSystem& fs, std::string_view name,
                                     std::string_view path_list) {
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
