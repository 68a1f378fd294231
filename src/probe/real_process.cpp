// Runs commands as real processes. A watchdog child leads a process group for the command and
// everything it starts; the parent feeds stdin, reads stdout and stderr and watches the timeout
// in one poll loop.
#include "probe/real_process.h"

#include "probe/line_splitter.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <thread>

namespace opforge::probe {
namespace {

using Clock = std::chrono::steady_clock;
using Deadline = std::optional<Clock::time_point>;

std::string os_error_text(int err) { return std::strerror(err); }

/// The pipes of one run, -1 where a pipe is not needed; whatever is still open closes with it.
struct Pipes {
  int in[2] = {-1, -1};   ///< the command's stdin; the parent writes in[1]
  int out[2] = {-1, -1};  ///< stdout, and stderr too with Output::lines
  int err[2] = {-1, -1};

  Pipes() = default;
  Pipes(const Pipes&) = delete;
  Pipes& operator=(const Pipes&) = delete;
  ~Pipes() {
    for (int* fd : all()) close_fd(*fd);
  }
  std::array<int*, 6> all() { return {&in[0], &in[1], &out[0], &out[1], &err[0], &err[1]}; }
  static void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

/// A pseudo-terminal as the out "pipe": out[0] the master (ours), out[1] the terminal the command
/// writes to, raw on output ('\n' stays '\n'), its size left 0x0 (no program elides to a width).
Status open_terminal(Pipes& pipes) {
  int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) return failure("posix_openpt: " + os_error_text(errno));
  pipes.out[0] = master;
  char name[256];
  if (::grantpt(master) != 0 || ::unlockpt(master) != 0 || ::ptsname_r(master, name, sizeof name) != 0)
    return failure("pseudo-terminal: " + os_error_text(errno));
  pipes.out[1] = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (pipes.out[1] < 0) return failure("open " + std::string(name) + ": " + os_error_text(errno));
  termios t{};
  if (::tcgetattr(pipes.out[1], &t) == 0) {
    t.c_oflag &= ~static_cast<tcflag_t>(OPOST);
    t.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | ISIG);
    (void)::tcsetattr(pipes.out[1], TCSANOW, &t);
  }
  return {};
}

Status open_pipes(const Command& command, Pipes& pipes) {
  // No pseudo-terminal (a container or root without /dev/pts): pipes, and the command prints as in one.
  if (command.output == Output::lines && command.terminal && !open_terminal(pipes)) {
    Pipes::close_fd(pipes.out[0]);
    Pipes::close_fd(pipes.out[1]);
  }
  if (pipes.out[0] >= 0) {
    if (::pipe2(pipes.err, O_CLOEXEC) != 0) return failure("pipe: " + os_error_text(errno));
  } else if (command.output != Output::inherit &&
             (::pipe2(pipes.out, O_CLOEXEC) != 0 || ::pipe2(pipes.err, O_CLOEXEC) != 0))
    return failure("pipe: " + os_error_text(errno));
  if (command.stdin_text) {
    if (::pipe2(pipes.in, O_CLOEXEC) != 0) return failure("pipe: " + os_error_text(errno));
    // Our end only: the poll loop never waits on a full pipe; the command reads as usual.
    if (::fcntl(pipes.in[1], F_SETFL, O_NONBLOCK) != 0) return failure("fcntl: " + os_error_text(errno));
  }
  return {};
}

/// What exec needs, made before fork so that the child does not build it on its way to exec.
struct ExecArgs {
  std::string exe;
  std::vector<std::string> env_strings;
  std::vector<char*> argv, envp;
};

std::vector<char*> to_cstrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

/// argv[0], looked up on the child's PATH (not ours) when it has no '/', so a custom env is honoured.
Result<std::string> resolve_executable(const Command& command, const FileSystem& fs) {
  const std::string& name = command.argv[0];
  if (name.find('/') != std::string::npos) return name;
  std::string path_list;
  if (command.env) {
    if (auto it = command.env->find("PATH"); it != command.env->end()) path_list = it->second;
  } else if (const char* p = std::getenv("PATH")) {
    path_list = p;
  }
  auto found = find_on_path(fs, name, path_list);
  if (!found) return failure("cannot run '" + name + "': not found on PATH", "install it or put its folder on PATH");
  return found->string();
}

Result<ExecArgs> prepare_exec(const Command& command, const FileSystem& fs) {
  ExecArgs args;
  args.exe = OPFORGE_TRY(resolve_executable(command, fs));
  if (command.env)
    for (auto& [k, v] : *command.env) args.env_strings.push_back(k + "=" + v);
  args.argv = to_cstrings(command.argv);
  args.envp = to_cstrings(args.env_strings);
  return args;
}

// ---- In the children (after fork) ----

[[noreturn]] void child_fail(const std::string& message) {
  std::string line = message + "\n";
  (void)!::write(2, line.data(), line.size());
  ::_exit(127);
}

/// Points 0, 1 and 2 at the pipes (stdin at /dev/null without stdin_text), then closes every
/// pipe end: the watchdog never execs, so O_CLOEXEC does not close them, and a write end it kept
/// would keep the command's stdin open forever.
void redirect_standard_fds(const Command& command, Pipes& pipes) {
  if (command.output != Output::inherit) {
    ::dup2(pipes.out[1], 1);
    ::dup2(command.output == Output::lines ? pipes.out[1] : pipes.err[1], 2);
  }
  if (command.stdin_text) {
    ::dup2(pipes.in[0], 0);
  } else if (int devnull = ::open("/dev/null", O_RDONLY); devnull >= 0) {
    ::dup2(devnull, 0);
    if (devnull > 2) ::close(devnull);
  }
  for (int* fd : pipes.all())
    if (*fd > 2) Pipes::close_fd(*fd);
}

[[noreturn]] void exec_command(const Command& command, const ExecArgs& args, const sigset_t& previous) {
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);  // the mask survives exec
  if (command.env) ::execve(args.exe.c_str(), args.argv.data(), args.envp.data());
  else ::execv(args.exe.c_str(), args.argv.data());
  child_fail("cannot execute " + args.exe + ": " + os_error_text(errno));
}

// ---- The command's whole tree, seen from the watchdog ----
// ninja puts each job in a process group of its own, and a compiler may ignore SIGTERM: signalling
// our group reaches neither. The watchdog is a child subreaper (PR_SET_CHILD_SUBREAPER), so a
// process of the tree whose parent dies is reparented to it rather than to init, and it finds the
// tree by walking /proc. It is a forked child of a process that may have threads: no allocation
// here, only system calls on buffers of its own.

struct Proc {
  pid_t pid, ppid;
  char state;
};
/// One scan of /proc (static: the watchdog's own copy after fork; 64Ki processes at most).
Proc g_procs[65536];

/// Parses the decimal digits of `s` (nothing else); -1 when it is not a pid.
pid_t parse_pid(const char* s) {
  long v = 0;
  if (!*s) return -1;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9' || v > 1 << 30) return -1;
    v = v * 10 + (*s - '0');
  }
  return static_cast<pid_t>(v);
}

/// The parent and state of `pid` from /proc/<pid>/stat ("pid (comm) S ppid ..."; comm may hold
/// spaces and parentheses, so the last ')' ends it).
bool read_stat(const char* pid_text, Proc& out) {
  char path[64] = "/proc/";
  std::size_t n = 6;
  for (const char* p = pid_text; *p && n < 50; ++p) path[n++] = *p;
  const char* tail = "/stat";
  for (const char* p = tail; *p; ++p) path[n++] = *p;
  path[n] = '\0';
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  ssize_t len = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (len <= 0) return false;
  buf[len] = '\0';
  char* close_paren = nullptr;
  for (char* p = buf; *p; ++p)
    if (*p == ')') close_paren = p;
  if (!close_paren || close_paren[1] != ' ' || !close_paren[2] || close_paren[3] != ' ') return false;
  out.state = close_paren[2];
  long ppid = 0;
  for (char* p = close_paren + 4; *p >= '0' && *p <= '9'; ++p) ppid = ppid * 10 + (*p - '0');
  out.ppid = static_cast<pid_t>(ppid);
  return true;
}

/// Every process of the machine with its parent; the count.
std::size_t scan_procs() {
  struct Dirent64 {
    ino64_t ino;
    off64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[1];
  };
  int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  std::size_t count = 0;
  alignas(8) char buf[16384];
  for (;;) {
    long n = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<Dirent64*>(buf + off);
      off += d->reclen;
      Proc p{};
      p.pid = parse_pid(d->name);
      if (p.pid > 0 && count < std::size(g_procs) && read_stat(d->name, p)) g_procs[count++] = p;
    }
  }
  ::close(dir);
  return count;
}

/// Marks, in g_procs[0..count), the descendants of `root` (their ppid becomes 0 when they are).
/// Returns how many there are; they are moved to the front, parents before children.
std::size_t descendants(pid_t root, std::size_t count) {
  std::size_t found = 0;
  // Generation by generation: a process joins when its parent is root or already found.
  for (bool grew = true; grew;) {
    grew = false;
    for (std::size_t i = found; i < count; ++i) {
      bool child = g_procs[i].ppid == root;
      for (std::size_t k = 0; !child && k < found; ++k) child = g_procs[i].ppid == g_procs[k].pid;
      if (child) {
        std::swap(g_procs[i], g_procs[found++]);
        grew = true;
      }
    }
  }
  return found;
}

/// Sends `sig` to every living process of our tree (not the watchdog), top down, scanning again
/// until a scan finds nothing new: a process started while we signalled is signalled too.
void signal_tree(int sig) {
  pid_t done[4096];
  std::size_t ndone = 0;
  for (int round = 0; round < 50; ++round) {
    const std::size_t n = descendants(::getpid(), scan_procs());
    bool any = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (g_procs[i].state == 'Z' || g_procs[i].state == 'X') continue;
      bool seen = false;
      for (std::size_t k = 0; k < ndone && !seen; ++k) seen = done[k] == g_procs[i].pid;
      if (seen) continue;
      ::kill(g_procs[i].pid, sig);
      if (ndone < std::size(done)) done[ndone++] = g_procs[i].pid;
      any = true;
    }
    if (!any) return;
  }
}

/// SIGKILLs the whole tree and reaps it: nothing the command started outlives it. Bounded (5 s): a
/// process stuck in the kernel is left to the kernel.
void kill_tree() {
  for (int round = 0; round < 5000; ++round) {
    const std::size_t n = descendants(::getpid(), scan_procs());
    bool alive = false;
    for (std::size_t i = 0; i < n; ++i)
      if (g_procs[i].state != 'Z' && g_procs[i].state != 'X') {
        ::kill(g_procs[i].pid, SIGKILL);
        alive = true;
      }
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {}
    if (!alive && n == 0) return;
    ::usleep(1000);
  }
}

/// Waits for the command and returns its wait status. When opforge dies the watchdog gets SIGTERM
/// and stops the command and its whole tree. SIGTSTP and SIGCONT from opforge (Ctrl-Z in its
/// terminal, then fg) stop and continue the whole tree: the compilers sit in process groups of
/// their own, which the terminal does not reach.
int supervise(pid_t cmd, const sigset_t& watched) {
  int st = 0;
  for (;;) {
    // Orphans of the tree are ours to reap now; the command's own status is kept.
    for (pid_t w; (w = ::waitpid(-1, &st, WNOHANG)) > 0;)
      if (w == cmd) return st;
    siginfo_t info{};
    const int sig = ::sigwaitinfo(&watched, &info);
    if (sig == SIGTSTP) signal_tree(SIGSTOP);
    if (sig == SIGCONT) signal_tree(SIGCONT);
    if (sig != SIGTERM) continue;
    // opforge is gone. SIGTERM first: ninja answers it by signalling each job's own process
    // group (the compilers) and exiting; then SIGKILL for the whole tree and our group.
    signal_tree(SIGCONT);  // a stopped tree cannot act on SIGTERM
    ::kill(cmd, SIGTERM);
    for (int i = 0; i < 100 && ::waitpid(cmd, &st, WNOHANG) != cmd; ++i) ::usleep(20000);
    kill_tree();
    ::kill(0, SIGKILL);
  }
}

/// Ends the watchdog as the command ended, so that the parent sees its exit code or its signal.
[[noreturn]] void exit_like(int st, const sigset_t& previous) {
  if (WIFEXITED(st)) ::_exit(WEXITSTATUS(st));
  int sig = WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL;
  ::prctl(PR_SET_PDEATHSIG, 0);
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
  ::signal(sig, SIG_DFL);
  ::kill(::getpid(), sig);
  ::_exit(128 + sig);
}

/// The first child: a watchdog that leads a new process group for the command and everything it
/// starts. When opforge dies, even by SIGKILL, the kernel sends the watchdog SIGTERM
/// (PR_SET_PDEATHSIG, tied to the forking thread: run() blocks in that thread until the command ends)
/// and it stops the command and the group. A parent-death signal on the command alone would
/// reach ninja but not the compilers ninja started.
[[noreturn]] void run_watchdog(const Command& command, const ExecArgs& args, Pipes& pipes, pid_t parent) {
  ::setpgid(0, 0);
  redirect_standard_fds(command, pipes);
  if (!command.cwd.empty() && ::chdir(command.cwd.c_str()) != 0)
    child_fail("cannot enter " + command.cwd.string() + ": " + os_error_text(errno));
  // SIGTERM (opforge died) and SIGCHLD (the command ended) are taken with sigwaitinfo, so
  // neither can slip in between a check and a wait.
  sigset_t watched, previous;
  sigemptyset(&watched);
  sigaddset(&watched, SIGTERM);
  sigaddset(&watched, SIGCHLD);
  sigaddset(&watched, SIGTSTP);
  sigaddset(&watched, SIGCONT);
  ::sigprocmask(SIG_BLOCK, &watched, &previous);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (::getppid() != parent) ::_exit(128 + SIGKILL);  // opforge died before prctl
  pid_t cmd = ::fork();
  if (cmd == 0) exec_command(command, args, previous);
  if (cmd < 0) child_fail("cannot execute " + args.exe + ": fork: " + os_error_text(errno));
  // The watchdog holds no pipe ends: EOF on them means the command's side is closed.
  for (int fd = 0; fd <= 2; ++fd) ::close(fd);
  const int st = supervise(cmd, watched);
  kill_tree();  // what the command left running (a job ninja could not stop, a daemon) ends with it
  exit_like(st, previous);
}

// ---- In the parent ----

// Ctrl-Z stops opforge's process group, and no watchdog is in it (each leads its own): opforge
// passes SIGTSTP and SIGCONT on to every running watchdog, which stops and continues its whole
// tree (supervise). The watchdogs are kept where a signal handler can read them.
std::atomic<pid_t> g_watchdogs[256];

void forward_to_watchdogs(int sig) {
  for (auto& w : g_watchdogs)
    if (pid_t pid = w.load(std::memory_order_relaxed); pid > 0) ::kill(pid, sig);
}

/// Whether opforge's process group is orphaned (POSIX): then the terminal's SIGTSTP stops nobody
/// (the kernel discards it), and stopping the watchdogs' trees would leave them stopped for good.
/// Follows opforge's ancestors while they share its group (`sh -c opforge`): the group is not
/// orphaned when the first one outside it is in the same session.
bool group_orphaned() {
  const pid_t group = ::getpgrp(), session = ::getsid(0);
  pid_t parent = ::getppid();
  for (int hops = 0; hops < 16 && parent > 1; ++hops) {
    if (::getpgid(parent) != group) return ::getsid(parent) != session;
    char text[16];
    int n = 0;
    for (pid_t v = parent; v > 0 && n < 15; v /= 10) text[n++] = static_cast<char>('0' + v % 10);
    std::reverse(text, text + n);
    text[n] = '\0';
    Proc p{};
    if (!read_stat(text, p)) return true;
    parent = p.ppid;
  }
  return true;
}

void on_tstp(int);
void on_cont(int) {
  const int saved = errno;
  forward_to_watchdogs(SIGCONT);
  ::signal(SIGTSTP, on_tstp);
  errno = saved;
}
void on_tstp(int) {
  const int saved = errno;
  if (!group_orphaned()) forward_to_watchdogs(SIGTSTP);
  // Then stop as the terminal asked: the default action, taken when this handler returns.
  ::signal(SIGTSTP, SIG_DFL);
  ::raise(SIGTSTP);
  errno = saved;
}

/// Installs the handlers once (only when opforge does not ignore SIGTSTP, as a shell without job
/// control makes it).
void forward_job_control() {
  static const bool installed = [] {
    struct sigaction old {};
    if (::sigaction(SIGTSTP, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) return false;
    struct sigaction sa {};
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_cont;
    ::sigaction(SIGCONT, &sa, nullptr);
    sa.sa_handler = on_tstp;
    ::sigaction(SIGTSTP, &sa, nullptr);
    return true;
  }();
  (void)installed;
}

/// A watchdog in g_watchdogs while it runs.
class WatchdogSlot {
 public:
  explicit WatchdogSlot(pid_t pid) {
    for (auto& w : g_watchdogs) {
      pid_t empty = 0;
      if (w.compare_exchange_strong(empty, pid)) {
        slot_ = &w;
        return;
      }
    }
  }
  ~WatchdogSlot() {
    if (slot_) slot_->store(0);
  }
  WatchdogSlot(const WatchdogSlot&) = delete;
  WatchdogSlot& operator=(const WatchdogSlot&) = delete;

 private:
  std::atomic<pid_t>* slot_ = nullptr;
};

/// poll()'s timeout: -1 without a deadline, 0 once it has passed.
int ms_left(const Deadline& deadline) {
  if (!deadline) return -1;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(std::min<long long>(left, INT_MAX)) : 0;
}

/// write() with SIGPIPE (the command closed its stdin early) turned into EPIPE: the signal is
/// blocked in this thread and, when the write raised it, taken back before the mask is restored.
ssize_t write_without_sigpipe(int fd, std::string_view data) {
  sigset_t pipe_only, previous, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  ::pthread_sigmask(SIG_BLOCK, &pipe_only, &previous);
  ssize_t n = ::write(fd, data.data(), data.size());
  int err = errno;
  if (n < 0 && err == EPIPE && !was_pending) {
    const timespec now{0, 0};
    while (::sigtimedwait(&pipe_only, nullptr, &now) < 0 && errno == EINTR) {}
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  errno = err;
  return n;
}

/// Writes what the pipe takes now; false when stdin is done (all written, or the command stopped
/// reading it).
bool feed_stdin(int fd, std::string_view& input) {
  ssize_t n = write_without_sigpipe(fd, input);
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  input.remove_prefix(static_cast<size_t>(n));
  return !input.empty();
}

/// Reads what is there into `sink` (and `lines`); false at end of file.
bool drain(int fd, std::string& sink, LineSplitter* lines) {
  char buf[65536];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0 && errno == EINTR) return true;
  if (n <= 0) return false;
  std::string_view chunk(buf, static_cast<size_t>(n));
  sink.append(chunk);
  if (lines) lines->feed(chunk);
  return true;
}

/// Feeds stdin, collects stdout and stderr and kills the group at the deadline, in one loop: a
/// command that writes before it has read all its input (cat, with more than a pipe's 64 KiB)
/// would otherwise wait on its full stdout while we wait on its full stdin.
void pump(const Command& command, Pipes& pipes, pid_t group, const Deadline& deadline, ProcessResult& result) {
  std::string_view input = command.stdin_text ? std::string_view(*command.stdin_text) : std::string_view();
  if (input.empty()) Pipes::close_fd(pipes.in[1]);
  LineSplitter lines(command);
  int* ends[3] = {&pipes.in[1], &pipes.out[0], &pipes.err[0]};
  for (;;) {
    pollfd fds[3];
    bool any_open = false;
    for (int i = 0; i < 3; ++i) {
      fds[i] = {*ends[i], static_cast<short>(i == 0 ? POLLOUT : POLLIN), 0};  // poll skips fd -1
      any_open = any_open || *ends[i] >= 0;
    }
    if (!any_open) break;
    int wait_ms = ms_left(deadline);
    if (wait_ms == 0) {
      ::kill(group, SIGTERM);  // the watchdog ends the command's whole tree (wait_for_exit: the grace)
      result.timed_out = true;
      break;
    }
    int r = ::poll(fds, 3, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    if (fds[0].revents && !feed_stdin(*ends[0], input)) Pipes::close_fd(*ends[0]);
    if (fds[1].revents && !drain(*ends[1], result.out, &lines)) Pipes::close_fd(*ends[1]);
    if (fds[2].revents && !drain(*ends[2], result.err, nullptr)) Pipes::close_fd(*ends[2]);
  }
  lines.finish();
}

/// A descriptor that becomes readable when `pid` exits (Linux >= 5.3), or -1 on older kernels.
/// Called through syscall(): glibc has a wrapper only since 2.36, below the oldest glibc opforge
/// runs on.
int open_pidfd(pid_t pid) {
#ifndef SYS_pidfd_open
  constexpr long SYS_pidfd_open = 434;  // the same number on every Linux architecture
#endif
  long fd = ::syscall(SYS_pidfd_open, pid, 0);
  return fd < 0 ? -1 : static_cast<int>(fd);
}

/// Sleeps until `pid` may have exited or the deadline passes: on its pidfd where the kernel has
/// one (wakes at once), else in steps that start at 1 ms (most commands are gone by then).
void await_exit(int pidfd, const Deadline& deadline, std::chrono::milliseconds& step) {
  if (pidfd >= 0) {
    pollfd fd{pidfd, POLLIN, 0};
    (void)::poll(&fd, 1, ms_left(deadline));
    return;
  }
  std::this_thread::sleep_for(step);
  step = std::min(step * 2, std::chrono::milliseconds(20));
}

/// How long the watchdog has to end the command's tree after the deadline, before its group is
/// SIGKILLed (it gives the command 2 s for SIGTERM, then kills the tree).
constexpr std::chrono::seconds kGrace(10);

/// The watchdog's wait status. When the deadline passes first (a command that closed its outputs
/// but runs on, or one whose outputs are not captured), the watchdog gets SIGTERM and ends the
/// command's whole tree; its group is SIGKILLed if it has not gone after kGrace. `peak_rss_kib`:
/// the watchdog's ru_maxrss, which holds the largest of the processes it and its command waited for.
Result<int> wait_for_exit(pid_t pid, const Deadline& deadline, bool& timed_out, long& peak_rss_kib) {
  int status = 0;
  struct rusage usage {};
  const int pidfd = deadline ? open_pidfd(pid) : -1;
  std::chrono::milliseconds step(1);
  Deadline grace;
  if (timed_out) grace = Clock::now() + kGrace;
  bool killed = false;
  Result<int> out = failure("waitpid: no result");
  for (;;) {
    const bool watch = deadline && !killed;
    pid_t w = ::wait4(pid, &status, watch ? WNOHANG : 0, &usage);
    if (w == pid) {
      out = status;
      peak_rss_kib = usage.ru_maxrss;
      break;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      out = failure("waitpid: " + os_error_text(errno));
      break;
    }
    if (!timed_out && Clock::now() >= *deadline) {
      ::kill(pid, SIGTERM);
      timed_out = true;
      grace = Clock::now() + kGrace;
      continue;
    }
    if (timed_out && Clock::now() >= *grace) {
      ::kill(-pid, SIGKILL);
      killed = true;
      continue;
    }
    await_exit(pidfd, timed_out ? grace : deadline, step);
  }
  if (pidfd >= 0) ::close(pidfd);
  return out;
}

Result<ProcessResult> finish(int status, ProcessResult result) {
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

class RealProcessRunner final : public ProcessRunner {
 public:
  explicit RealProcessRunner(const FileSystem& fs) : fs_(fs) {}

  Result<ProcessResult> run(const Command& command) override {
    if (command.argv.empty()) return failure("empty command");
    forward_job_control();
    ExecArgs args = OPFORGE_TRY(prepare_exec(command, fs_));
    Pipes pipes;
    OPFORGE_CHECK(open_pipes(command, pipes));
    const pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) return failure("fork: " + os_error_text(errno));
    if (pid == 0) run_watchdog(command, args, pipes, parent);
    ::setpgid(pid, pid);  // also here, so that a kill of the group below cannot come first
    WatchdogSlot slot(pid);
    for (int* fd : {&pipes.in[0], &pipes.out[1], &pipes.err[1]}) Pipes::close_fd(*fd);
    Deadline deadline;
    if (command.timeout.count() > 0) deadline = Clock::now() + command.timeout;
    ProcessResult result;
    pump(command, pipes, pid, deadline, result);
    int status = OPFORGE_TRY(wait_for_exit(pid, deadline, result.timed_out, result.peak_rss_kib));
    return finish(status, std::move(result));
  }

 private:
  const FileSystem& fs_;
};

}  // namespace

std::unique_ptr<ProcessRunner> make_real_process_runner(const FileSystem& fs) {
  return std::make_unique<RealProcessRunner>(fs);
}

}  // namespace opforge::probe
