// Whole-file reads and writes with io_submit/io_getevents and O_DIRECT.
//
// libaio is opened with dlopen so that the shipped library has no DT_NEEDED entry for it: the
// wheel keeps a manylinux tag and loads on distributions that name it differently (Ubuntu 24.04:
// libaio.so.1t64). The header is needed at build time only, for the structure layouts.
#include <dlfcn.h>
#include <fcntl.h>
#include <libaio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "aio.h"

#define OPFORGE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

thread_local std::string g_error;
thread_local std::string g_note;

int fail(int code, std::string message) {
  g_error = std::move(message);
  return code;
}

std::string errno_text(int err) { return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")"; }

// O_DIRECT wants buffer addresses, lengths and offsets aligned to the device's logical block;
// 4096 covers every current device (512-byte and 4K-native alike).
constexpr std::size_t kAlign = 4096;
constexpr std::uint64_t kDefaultBlock = std::uint64_t{1} << 20;
constexpr int kDefaultDepth = 32;

std::uint64_t round_up(std::uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

struct Libaio {
  void* handle = nullptr;
  int (*setup)(int, io_context_t*) = nullptr;
  int (*destroy)(io_context_t) = nullptr;
  int (*submit)(io_context_t, long, struct iocb**) = nullptr;
  int (*getevents)(io_context_t, long, long, struct io_event*, struct timespec*) = nullptr;
  std::string problem;  // why it could not be opened
};

const Libaio& libaio() {
  static Libaio lib;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* names[] = {"libaio.so.1", "libaio.so.1t64", "libaio.so"};
    std::string tried;
    for (const char* name : names) {
      if ((lib.handle = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
      tried += std::string(tried.empty() ? "" : "; ") + dlerror();
    }
    if (!lib.handle) {
      lib.problem = "libaio is not installed (tried libaio.so.1, libaio.so.1t64, libaio.so: " + tried +
                    "); install it: apt-get install libaio1 (Ubuntu 24.04: libaio1t64), "
                    "yum install libaio, pacman -S libaio";
      return;
    }
    lib.setup = reinterpret_cast<decltype(lib.setup)>(dlsym(lib.handle, "io_setup"));
    lib.destroy = reinterpret_cast<decltype(lib.destroy)>(dlsym(lib.handle, "io_destroy"));
    lib.submit = reinterpret_cast<decltype(lib.submit)>(dlsym(lib.handle, "io_submit"));
    lib.getevents = reinterpret_cast<decltype(lib.getevents)>(dlsym(lib.handle, "io_getevents"));
    if (!lib.setup || !lib.destroy || !lib.submit || !lib.getevents)
      lib.problem = "libaio was found but lacks io_setup/io_destroy/io_submit/io_getevents";
  });
  return lib;
}

enum class Dir { read, write };

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

struct Context {
  const Libaio* lib;
  io_context_t ctx = nullptr;
  ~Context() {
    if (ctx) lib->destroy(ctx);
  }
};

struct AlignedBuf {
  void* p = nullptr;
  ~AlignedBuf() { std::free(p); }
};

// One request in flight: a piece of the file, where its bytes go (the caller's buffer or a
// bounce buffer) and how much of it is done (requests may complete partially).
struct Slot {
  struct iocb cb;
  std::uint64_t off = 0;  // file offset of the piece
  std::uint64_t len = 0;  // bytes of the caller's data in the piece
  std::uint64_t req = 0;  // bytes asked of the kernel (len rounded up to kAlign for a bounce)
  std::uint64_t done = 0;
  char* user = nullptr;  // caller's bytes of the piece
  char* io = nullptr;    // where the kernel reads/writes: user, or this slot's bounce buffer
};

const char* verb(Dir d) { return d == Dir::read ? "read" : "write"; }

/// One whole-file read or write: open, then keep up to `depth` pieces of `block` bytes in flight
/// until every byte is done. Each step returns 0 or the negative errno that opforge_aio_* returns
/// (with the message in g_error).
class Transfer {
 public:
  Transfer(Dir dir, const char* path, char* buf, std::uint64_t size, std::uint64_t block, int depth)
      : dir_(dir),
        path_(path),
        buf_(buf),
        size_(size),
        block_(block ? block : kDefaultBlock),
        depth_(depth > 0 ? depth : kDefaultDepth),
        fn_(dir == Dir::read ? "opforge_aio_read" : "opforge_aio_write") {}

  int run(int flags, int* used_direct) {
    if (used_direct) *used_direct = 0;
    if (!path_) return fail(-EINVAL, fn_ + ": null path");
    if (size_ && !buf_) return fail(-EINVAL, fn_ + ": " + path_ + ": null buffer");
    if (block_ % kAlign)
      return error(-EINVAL, "block size " + std::to_string(block_) +
                                " is not a multiple of 4096 (O_DIRECT needs aligned requests)");
    if (!lib_.problem.empty()) return fail(-ENOENT, fn_ + ": " + lib_.problem);
    if (int rc = open_file(!(flags & OPFORGE_AIO_BUFFERED))) return rc;
    if (used_direct) *used_direct = direct_;
    if (int rc = check_file_size()) return rc;
    if (size_ == 0) return 0;
    if (int rc = set_up()) return rc;
    if (int rc = ctx_.ctx ? pump() : copy_in_order()) return rc;
    if (used_direct) *used_direct = direct_;
    return finish();
  }

 private:
  int error(int code, const std::string& what) { return fail(code, fn_ + ": " + path_ + ": " + what); }

  int open_with(int extra) {
    const int base = dir_ == Dir::read ? O_RDONLY : (O_WRONLY | O_CREAT | O_TRUNC);
    fd_.fd = ::open(path_, base | extra | O_CLOEXEC, 0644);
    return fd_.fd < 0 ? errno : 0;
  }

  int open_file(bool direct) {
    direct_ = direct;
    int err = direct ? open_with(O_DIRECT) : 0;
    if (direct && err == EINVAL) {
      // tmpfs and some FUSE file systems refuse O_DIRECT at open.
      g_note =
          std::string(path_) + ": the file system refuses O_DIRECT (" + errno_text(EINVAL) + "); used buffered I/O";
      direct_ = false;
    }
    if (!direct_) err = open_with(0);
    if (err == 0) return 0;
    return fail(-err, fn_ + ": cannot open " + path_ + " for " + (dir_ == Dir::read ? "reading" : "writing") + ": " +
                          errno_text(err));
  }

  int check_file_size() {
    if (dir_ != Dir::read) return 0;
    struct stat st;
    if (::fstat(fd_.fd, &st) != 0) {
      int err = errno;
      return fail(-err, fn_ + ": cannot stat " + path_ + ": " + errno_text(err));
    }
    if (static_cast<std::uint64_t>(st.st_size) < size_)
      return fail(-EIO, fn_ + ": short read: " + path_ + " has " + std::to_string(st.st_size) + " bytes, " +
                            std::to_string(size_) + " were asked for");
    return 0;
  }

  // With O_DIRECT a piece goes straight to the caller's buffer when its address and length are
  // aligned; otherwise (unaligned caller, the tail of a file whose size is not a multiple of
  // 4096) through this slot's aligned bounce buffer.
  int set_up() {
    const std::uint64_t pieces = (size_ + block_ - 1) / block_;
    if (static_cast<std::uint64_t>(depth_) > pieces) depth_ = static_cast<int>(pieces);
    aligned_user_ = reinterpret_cast<std::uintptr_t>(buf_) % kAlign == 0;
    if (direct_) {
      std::uint64_t per_slot = aligned_user_ ? round_up(size_ % block_) : block_;
      if (per_slot == 0) per_slot = kAlign;
      if (posix_memalign(&bounce_.p, kAlign, per_slot * (aligned_user_ ? 1 : depth_)) != 0)
        return error(-ENOMEM, "cannot allocate bounce buffers");
    }
    if (int rc = lib_.setup(depth_, &ctx_.ctx); rc < 0) {
      ctx_.ctx = nullptr;
      // A kernel without native AIO (CONFIG_AIO off, gVisor, QEMU's user-mode emulation, where
      // aarch64 wheels are checked on x86-64): the same bytes through pread/pwrite, said in the note.
      if (rc == -ENOSYS) return plain_io_instead();
      return error(rc, "io_setup(" + std::to_string(depth_) + ") failed: " + errno_text(-rc) +
                           (rc == -EAGAIN ? "; raise /proc/sys/fs/aio-max-nr or lower queue_depth" : ""));
    }
    slots_.resize(depth_);
    for (int i = depth_ - 1; i >= 0; --i) free_slots_.push_back(&slots_[i]);
    events_.resize(depth_);
    return 0;
  }

  /// After io_setup's ENOSYS: the file reopened without O_DIRECT (whose alignment rules only
  /// the AIO path keeps), for copy_in_order.
  int plain_io_instead() {
    g_note = std::string(path_) + ": this kernel has no native AIO (io_setup: " + errno_text(ENOSYS) +
             "); used pread/pwrite, one block at a time";
    if (!direct_) return 0;
    ::close(fd_.fd);
    fd_.fd = -1;
    direct_ = false;
    if (int err = open_with(0))
      return fail(-err, fn_ + ": cannot reopen " + path_ + " without O_DIRECT: " + errno_text(err));
    return 0;
  }

  /// The transfer with pread/pwrite, block by block (partial transfers continued).
  int copy_in_order() {
    for (std::uint64_t at = 0; at < size_;) {
      const std::size_t want = static_cast<std::size_t>(std::min(block_, size_ - at));
      const ssize_t got = dir_ == Dir::read ? ::pread(fd_.fd, buf_ + at, want, static_cast<off_t>(at))
                                            : ::pwrite(fd_.fd, buf_ + at, want, static_cast<off_t>(at));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        const int err = errno;
        return error(-err,
                     std::string(verb(dir_)) + " at offset " + std::to_string(at) + " failed: " + errno_text(err));
      }
      if (got == 0)
        return fail(-EIO, fn_ + ": short " + verb(dir_) + ": " + path_ + ": " + std::to_string(at) +
                              " bytes transferred, " + std::to_string(size_) + " expected (file changed underneath?)");
      at += static_cast<std::uint64_t>(got);
    }
    return 0;
  }

  /// Asks the kernel for what is left of the slot's piece.
  void queue(Slot* s) {
    std::uint64_t left = s->req - s->done;
    char* at = s->io + s->done;
    if (dir_ == Dir::read) io_prep_pread(&s->cb, fd_.fd, at, left, s->off + s->done);
    else io_prep_pwrite(&s->cb, fd_.fd, at, left, s->off + s->done);
    s->cb.data = s;
    batch_.push_back(&s->cb);
  }

  /// Gives the next piece of the file to a free slot.
  void start_piece(Slot* s) {
    s->off = next_;
    s->len = std::min(block_, size_ - next_);
    s->user = buf_ + next_;
    s->done = 0;
    if (!direct_ || (aligned_user_ && s->len % kAlign == 0)) {
      s->io = s->user;
      s->req = s->len;
    } else {
      std::size_t index = aligned_user_ ? 0 : static_cast<std::size_t>(s - slots_.data());
      s->io = static_cast<char*>(bounce_.p) + index * (aligned_user_ ? 0 : block_);
      s->req = round_up(s->len);
      if (dir_ == Dir::write) {
        std::memcpy(s->io, s->user, s->len);
        std::memset(s->io + s->len, 0, s->req - s->len);
      }
    }
    next_ += s->len;
    queue(s);
  }

  int submit() {
    int rc = lib_.submit(ctx_.ctx, static_cast<long>(batch_.size()), batch_.data());
    if (rc < 0 && rc != -EAGAIN) return error(rc, "io_submit failed: " + errno_text(-rc));
    int n = rc < 0 ? 0 : rc;
    inflight_ += n;
    batch_.erase(batch_.begin(), batch_.begin() + n);
    if (n == 0 && inflight_ == 0) return error(-EAGAIN, "io_submit accepted nothing");
    return 0;
  }

  /// One finished request: the slot is free again, or what is left of its piece is resubmitted.
  int complete(Slot* s, long res) {
    if (res < 0)
      return error(static_cast<int>(res), std::string(verb(dir_)) + " of " + std::to_string(s->req - s->done) +
                                              " bytes at offset " + std::to_string(s->off + s->done) +
                                              " failed: " + errno_text(static_cast<int>(-res)));
    s->done += static_cast<std::uint64_t>(res);
    // A read of a bounce piece ends at end of file, short of req but past len: complete.
    if (s->done < (dir_ == Dir::read ? s->len : s->req)) {
      if (res == 0)
        return fail(-EIO, fn_ + ": short " + verb(dir_) + ": " + path_ + ": " + std::to_string(s->off + s->done) +
                              " bytes transferred, " + std::to_string(size_) + " expected (file changed underneath?)");
      if (direct_ && s->done % kAlign)
        return error(-EIO, std::string("partial O_DIRECT ") + verb(dir_) + " of " + std::to_string(s->done) +
                               " bytes at offset " + std::to_string(s->off) + " is not block aligned");
      queue(s);
      return 0;
    }
    if (dir_ == Dir::read && s->io != s->user) std::memcpy(s->user, s->io, s->len);
    free_slots_.push_back(s);
    return 0;
  }

  int reap() {
    int got = lib_.getevents(ctx_.ctx, 1, depth_, events_.data(), nullptr);
    if (got == -EINTR) return 0;
    if (got < 0) return error(got, "io_getevents failed: " + errno_text(-got));
    inflight_ -= got;
    for (int i = 0; i < got; ++i)
      if (int rc = complete(static_cast<Slot*>(events_[i].data), static_cast<long>(events_[i].res))) return rc;
    return 0;
  }

  int pump() {
    while (next_ < size_ || inflight_ > 0 || !batch_.empty()) {
      while (next_ < size_ && !free_slots_.empty()) {
        Slot* s = free_slots_.back();
        free_slots_.pop_back();
        start_piece(s);
      }
      if (!batch_.empty())
        if (int rc = submit()) return rc;
      if (inflight_ > 0)
        if (int rc = reap()) return rc;
    }
    return 0;
  }

  int finish() {
    // The padded tail of an O_DIRECT write made the file longer than the data.
    if (dir_ == Dir::write && direct_ && size_ % kAlign && ::ftruncate(fd_.fd, static_cast<off_t>(size_)) != 0) {
      int err = errno;
      return error(-err, "ftruncate to " + std::to_string(size_) + " failed: " + errno_text(err));
    }
    int rc = ::close(fd_.fd);
    int err = errno;
    fd_.fd = -1;
    return rc == 0 ? 0 : error(-err, "close failed: " + errno_text(err));
  }

  const Dir dir_;
  const char* const path_;
  char* const buf_;
  const std::uint64_t size_;
  const std::uint64_t block_;
  int depth_;
  const std::string fn_;
  const Libaio& lib_ = libaio();
  Fd fd_;
  bool direct_ = false;
  bool aligned_user_ = false;
  AlignedBuf bounce_;
  Context ctx_{&lib_};
  std::vector<Slot> slots_;
  std::vector<Slot*> free_slots_;
  std::vector<struct iocb*> batch_;
  std::vector<struct io_event> events_;
  std::uint64_t next_ = 0;  ///< the file offset of the first piece not yet given to a slot
  int inflight_ = 0;
};

int transfer(Dir dir, const char* path, char* buf, std::uint64_t size, std::uint64_t block, int depth, int flags,
             int* used_direct) {
  g_note.clear();
  return Transfer(dir, path, buf, size, block, depth).run(flags, used_direct);
}

}  // namespace

OPFORGE_EXPORT int opforge_aio_abi_version(void) { return 1; }
OPFORGE_EXPORT const char* opforge_aio_last_error(void) { return g_error.c_str(); }
OPFORGE_EXPORT const char* opforge_aio_last_note(void) { return g_note.c_str(); }

OPFORGE_EXPORT int opforge_aio_available(void) {
  const Libaio& lib = libaio();
  if (!lib.problem.empty()) return fail(-ENOENT, "opforge_aio: " + lib.problem);
  return 0;
}

OPFORGE_EXPORT int opforge_aio_file_size(const char* path, uint64_t* size) {
  struct stat st;
  if (!path || !size) return fail(-EINVAL, "opforge_aio_file_size: null argument");
  if (::stat(path, &st) != 0) {
    int err = errno;
    return fail(-err, std::string("opforge_aio_file_size: cannot stat ") + path + ": " + errno_text(err));
  }
  if (!S_ISREG(st.st_mode))
    return fail(-EINVAL, std::string("opforge_aio_file_size: ") + path + " is not a regular file");
  *size = static_cast<uint64_t>(st.st_size);
  return 0;
}

OPFORGE_EXPORT int opforge_aio_read(const char* path, void* buf, uint64_t size, uint64_t block_size, int queue_depth,
                                    int flags, int* used_direct) {
  return transfer(Dir::read, path, static_cast<char*>(buf), size, block_size, queue_depth, flags, used_direct);
}

OPFORGE_EXPORT int opforge_aio_write(const char* path, const void* buf, uint64_t size, uint64_t block_size,
                                     int queue_depth, int flags, int* used_direct) {
  return transfer(Dir::write, path, const_cast<char*>(static_cast<const char*>(buf)), size, block_size, queue_depth,
                  flags, used_direct);
}
