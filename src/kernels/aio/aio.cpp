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

std::string errno_text(int err) {
  return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")";
}

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
      lib.problem = "libaio is not installed (tried libaio.so.1, libaio.so.1t64, libaio.so: " +
                    tried + "); install it: apt-get install libaio1 (Ubuntu 24.04: libaio1t64), "
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
  char* user = nullptr;   // caller's bytes of the piece
  char* io = nullptr;     // where the kernel reads/writes: user, or this slot's bounce buffer
};

const char* verb(Dir d) { return d == Dir::read ? "read" : "write"; }

int transfer(Dir dir, const char* path, char* buf, std::uint64_t size, std::uint64_t block,
             int depth, int flags, int* used_direct) {
  g_note.clear();
  if (used_direct) *used_direct = 0;
  const char* fn = dir == Dir::read ? "opforge_aio_read" : "opforge_aio_write";
  if (!path) return fail(-EINVAL, std::string(fn) + ": null path");
  if (size && !buf) return fail(-EINVAL, std::string(fn) + ": " + path + ": null buffer");
  if (block == 0) block = kDefaultBlock;
  if (depth <= 0) depth = kDefaultDepth;
  if (block % kAlign)
    return fail(-EINVAL, std::string(fn) + ": " + path + ": block size " + std::to_string(block) +
                             " is not a multiple of 4096 (O_DIRECT needs aligned requests)");
  const Libaio& lib = libaio();
  if (!lib.problem.empty()) return fail(-ENOENT, std::string(fn) + ": " + lib.problem);

  int base = dir == Dir::read ? O_RDONLY : (O_WRONLY | O_CREAT | O_TRUNC);
  Fd fd;
  bool direct = !(flags & OPFORGE_AIO_BUFFERED);
  if (direct) {
    fd.fd = ::open(path, base | O_DIRECT | O_CLOEXEC, 0644);
    if (fd.fd < 0 && errno == EINVAL) {
      // tmpfs and some FUSE file systems refuse O_DIRECT at open.
      g_note = std::string(path) + ": the file system refuses O_DIRECT (" + errno_text(EINVAL) +
               "); used buffered I/O";
      direct = false;
    } else if (fd.fd < 0) {
      int err = errno;
      return fail(-err, std::string(fn) + ": cannot open " + path + " for " +
                            (dir == Dir::read ? "reading" : "writing") + ": " + errno_text(err));
    }
  }
  if (!direct) {
    fd.fd = ::open(path, base | O_CLOEXEC, 0644);
    if (fd.fd < 0) {
      int err = errno;
      return fail(-err, std::string(fn) + ": cannot open " + path + " for " +
                            (dir == Dir::read ? "reading" : "writing") + ": " + errno_text(err));
    }
  }
  if (used_direct) *used_direct = direct;

  if (dir == Dir::read) {
    struct stat st;
    if (::fstat(fd.fd, &st) != 0) {
      int err = errno;
      return fail(-err, std::string(fn) + ": cannot stat " + path + ": " + errno_text(err));
    }
    if (static_cast<std::uint64_t>(st.st_size) < size)
      return fail(-EIO, std::string(fn) + ": short read: " + path + " has " +
                            std::to_string(st.st_size) + " bytes, " + std::to_string(size) +
                            " were asked for");
  }
  if (size == 0) return 0;

  std::uint64_t pieces = (size + block - 1) / block;
  if (static_cast<std::uint64_t>(depth) > pieces) depth = static_cast<int>(pieces);
  // With O_DIRECT a piece goes straight to the caller's buffer when its address and length are
  // aligned; otherwise (unaligned caller, the tail of a file whose size is not a multiple of
  // 4096) through this slot's aligned bounce buffer.
  bool aligned_user = reinterpret_cast<std::uintptr_t>(buf) % kAlign == 0;
  AlignedBuf bounce;
  if (direct) {
    std::uint64_t per_slot = aligned_user ? round_up(size % block) : block;
    if (per_slot == 0) per_slot = kAlign;
    if (posix_memalign(&bounce.p, kAlign, per_slot * (aligned_user ? 1 : depth)) != 0)
      return fail(-ENOMEM, std::string(fn) + ": " + path + ": cannot allocate bounce buffers");
  }

  Context ctx{&lib};
  if (int rc = lib.setup(depth, &ctx.ctx); rc < 0) {
    ctx.ctx = nullptr;
    return fail(rc, std::string(fn) + ": " + path + ": io_setup(" + std::to_string(depth) +
                        ") failed: " + errno_text(-rc) +
                        (rc == -EAGAIN ? "; raise /proc/sys/fs/aio-max-nr or lower queue_depth" : ""));
  }

  std::vector<Slot> slots(depth);
  std::vector<Slot*> free_slots;
  for (int i = depth - 1; i >= 0; --i) free_slots.push_back(&slots[i]);
  std::vector<struct iocb*> batch;
  std::vector<struct io_event> events(depth);
  std::uint64_t next = 0;
  int inflight = 0;

  auto prep = [&](Slot* s) {
    std::uint64_t left = s->req - s->done;
    char* at = s->io + s->done;
    if (dir == Dir::read) io_prep_pread(&s->cb, fd.fd, at, left, s->off + s->done);
    else io_prep_pwrite(&s->cb, fd.fd, at, left, s->off + s->done);
    s->cb.data = s;
    batch.push_back(&s->cb);
  };

  while (next < size || inflight > 0 || !batch.empty()) {
    while (next < size && !free_slots.empty()) {
      Slot* s = free_slots.back();
      free_slots.pop_back();
      s->off = next;
      s->len = std::min(block, size - next);
      s->user = buf + next;
      s->done = 0;
      bool straight = !direct || (aligned_user && s->len % kAlign == 0);
      if (straight) {
        s->io = s->user;
        s->req = s->len;
      } else {
        std::size_t index = aligned_user ? 0 : static_cast<std::size_t>(s - slots.data());
        s->io = static_cast<char*>(bounce.p) + index * (aligned_user ? 0 : block);
        s->req = round_up(s->len);
        if (dir == Dir::write) {
          std::memcpy(s->io, s->user, s->len);
          std::memset(s->io + s->len, 0, s->req - s->len);
        }
      }
      next += s->len;
      prep(s);
    }
    if (!batch.empty()) {
      int rc = lib.submit(ctx.ctx, static_cast<long>(batch.size()), batch.data());
      if (rc < 0 && rc != -EAGAIN)
        return fail(rc, std::string(fn) + ": " + path + ": io_submit failed: " + errno_text(-rc));
      int n = rc < 0 ? 0 : rc;
      inflight += n;
      batch.erase(batch.begin(), batch.begin() + n);
      if (n == 0 && inflight == 0)
        return fail(-EAGAIN, std::string(fn) + ": " + path + ": io_submit accepted nothing");
    }
    if (inflight == 0) continue;
    int got = lib.getevents(ctx.ctx, 1, depth, events.data(), nullptr);
    if (got == -EINTR) continue;
    if (got < 0)
      return fail(got, std::string(fn) + ": " + path + ": io_getevents failed: " + errno_text(-got));
    inflight -= got;
    for (int i = 0; i < got; ++i) {
      Slot* s = static_cast<Slot*>(events[i].data);
      long res = static_cast<long>(events[i].res);
      if (res < 0)
        return fail(static_cast<int>(res), std::string(fn) + ": " + path + ": " + verb(dir) +
                                               " of " + std::to_string(s->req - s->done) +
                                               " bytes at offset " + std::to_string(s->off + s->done) +
                                               " failed: " + errno_text(static_cast<int>(-res)));
      s->done += static_cast<std::uint64_t>(res);
      // A read of a bounce piece ends at end of file, short of req but past len: complete.
      bool complete = s->done >= (dir == Dir::read ? s->len : s->req);
      if (!complete) {
        if (res == 0)
          return fail(-EIO, std::string(fn) + ": short " + verb(dir) + ": " + path + ": " +
                                std::to_string(s->off + s->done) + " bytes transferred, " +
                                std::to_string(size) + " expected (file changed underneath?)");
        if (direct && s->done % kAlign)
          return fail(-EIO, std::string(fn) + ": " + path + ": partial O_DIRECT " + verb(dir) +
                                " of " + std::to_string(s->done) + " bytes at offset " +
                                std::to_string(s->off) + " is not block aligned");
        prep(s);  // the rest of the piece, resubmitted
        continue;
      }
      if (dir == Dir::read && s->io != s->user) std::memcpy(s->user, s->io, s->len);
      free_slots.push_back(s);
    }
  }
  // The padded tail of an O_DIRECT write made the file longer than the data.
  if (dir == Dir::write && direct && size % kAlign && ::ftruncate(fd.fd, static_cast<off_t>(size)) != 0) {
    int err = errno;
    return fail(-err, std::string(fn) + ": " + path + ": ftruncate to " + std::to_string(size) +
                          " failed: " + errno_text(err));
  }
  if (::close(fd.fd) != 0) {
    int err = errno;
    fd.fd = -1;
    return fail(-err, std::string(fn) + ": " + path + ": close failed: " + errno_text(err));
  }
  fd.fd = -1;
  return 0;
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

OPFORGE_EXPORT int opforge_aio_read(const char* path, void* buf, uint64_t size, uint64_t block_size,
                                    int queue_depth, int flags, int* used_direct) {
  return transfer(Dir::read, path, static_cast<char*>(buf), size, block_size, queue_depth, flags,
                  used_direct);
}

OPFORGE_EXPORT int opforge_aio_write(const char* path, const void* buf, uint64_t size,
                                     uint64_t block_size, int queue_depth, int flags, int* used_direct) {
  return transfer(Dir::write, path, const_cast<char*>(static_cast<const char*>(buf)), size,
                  block_size, queue_depth, flags, used_direct);
}
