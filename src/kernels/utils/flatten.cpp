// flatten / unflatten: copy a list of buffers into one contiguous buffer and back.
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "parallel.h"

#define OPFORGE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

thread_local std::string g_error;

int fail(int code, std::string message) {
  g_error = std::move(message);
  return code;
}

// Below this many bytes in total one thread copies everything: memcpy already runs near memory
// bandwidth for one core and thread start-up would dominate.
constexpr std::size_t kParallelBytes = std::size_t{8} << 20;
constexpr std::size_t kChunk = std::size_t{1} << 20;

struct Piece {
  char* dst;
  const char* src;
  std::size_t size;
};

// Splits every member into chunks of at most kChunk bytes so that threads share the work evenly
// whatever the mix of sizes (one huge member and many tiny ones).
void copy_pieces(const std::vector<Piece>& members, std::size_t total, int threads) {
  if (total < kParallelBytes || threads == 1) {
    for (const auto& m : members)
      if (m.size) std::memcpy(m.dst, m.src, m.size);
    return;
  }
  std::vector<Piece> chunks;
  chunks.reserve(members.size() + total / kChunk + 1);
  for (const auto& m : members)
    for (std::size_t off = 0; off < m.size; off += kChunk)
      chunks.push_back({m.dst + off, m.src + off, std::min(kChunk, m.size - off)});
  // Chunks are contiguous in the flat buffer, so contiguous index ranges give each thread one
  // contiguous stretch of it.
  opforge_kernels::parallel_for(chunks.size(), 1, threads, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) std::memcpy(chunks[i].dst, chunks[i].src, chunks[i].size);
  });
}

int check(const void* flat, const void* list, const std::size_t* sizes, std::size_t n, const char* fn) {
  if (n && (!list || !sizes))
    return fail(-EINVAL, std::string(fn) + ": null member list or sizes with n = " + std::to_string(n));
  std::size_t total = 0;
  for (std::size_t i = 0; i < n; ++i) total += sizes[i];
  if (total && !flat) return fail(-EINVAL, std::string(fn) + ": null flat buffer");
  return 0;
}

}  // namespace

OPFORGE_EXPORT int opforge_utils_abi_version(void) { return 1; }

OPFORGE_EXPORT const char* opforge_utils_last_error(void) { return g_error.c_str(); }

/// Copies members[i] (sizes[i] bytes each) one after the other into flat, which must hold
/// their total. threads = 0 picks the number of usable CPUs.
OPFORGE_EXPORT int opforge_utils_flatten(const void* const* members, const std::size_t* sizes, std::size_t n,
                                         void* flat, int threads) {
  if (int rc = check(flat, members, sizes, n, "opforge_utils_flatten")) return rc;
  std::vector<Piece> pieces;
  pieces.reserve(n);
  std::size_t off = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (sizes[i] && !members[i])
      return fail(-EINVAL, "opforge_utils_flatten: member " + std::to_string(i) + " is null");
    pieces.push_back({static_cast<char*>(flat) + off, static_cast<const char*>(members[i]), sizes[i]});
    off += sizes[i];
  }
  copy_pieces(pieces, off, threads);
  return 0;
}

/// The inverse: copies consecutive stretches of flat into members[i] (sizes[i] bytes each).
OPFORGE_EXPORT int opforge_utils_unflatten(const void* flat, void* const* members, const std::size_t* sizes,
                                           std::size_t n, int threads) {
  if (int rc = check(flat, members, sizes, n, "opforge_utils_unflatten")) return rc;
  std::vector<Piece> pieces;
  pieces.reserve(n);
  std::size_t off = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (sizes[i] && !members[i])
      return fail(-EINVAL, "opforge_utils_unflatten: member " + std::to_string(i) + " is null");
    pieces.push_back({static_cast<char*>(members[i]), static_cast<const char*>(flat) + off, sizes[i]});
    off += sizes[i];
  }
  copy_pieces(pieces, off, threads);
  return 0;
}
