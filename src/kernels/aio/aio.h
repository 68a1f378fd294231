#pragma once
/// C ABI of libopforge_aio.so: whole-file reads and writes with Linux native AIO (libaio, opened
/// with dlopen at first use) and O_DIRECT. Functions return 0 or a negative errno; the message,
/// naming the path and the errno, is in opforge_aio_last_error() (thread-local).
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  OPFORGE_AIO_BUFFERED = 1,  ///< do not even try O_DIRECT
};

int opforge_aio_abi_version(void);
const char* opforge_aio_last_error(void);
/// What the last call on this thread decided without failing, e.g. that the file system refused
/// O_DIRECT and buffered I/O was used; "" when nothing to say.
const char* opforge_aio_last_note(void);

/// 0 when libaio could be opened (libaio.so.1, then libaio.so.1t64); else -ENOENT and a message
/// naming the package to install.
int opforge_aio_available(void);

/// The size in bytes of the file at path.
int opforge_aio_file_size(const char* path, uint64_t* size);

/// Reads the first `size` bytes of the file into buf (any alignment). A file shorter than `size`
/// is an error (-EIO, "short read"), never a partial result. block_size: bytes per request, a
/// multiple of 4096 (0 = 1 MiB); queue_depth: requests in flight (0 = 32). *used_direct (may be
/// null) tells whether O_DIRECT was used.
int opforge_aio_read(const char* path, void* buf, uint64_t size, uint64_t block_size, int queue_depth, int flags,
                     int* used_direct);

/// Creates or truncates the file at path and writes `size` bytes from buf (any alignment).
int opforge_aio_write(const char* path, const void* buf, uint64_t size, uint64_t block_size, int queue_depth, int flags,
                      int* used_direct);

#ifdef __cplusplus
}
#endif
