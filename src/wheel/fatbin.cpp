// The CUDA fatbinary container as found in a `.nv_fatbin` section, decoded from the bytes nvcc 13.0
// writes (no cuobjdump in the toolkit here; checked against a .so built with
// `-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]`).
// All fields little-endian.
//
// The section holds one or more fatbinaries back to back (one per translation unit and one from the
// device link), each 8-byte aligned, zero padding between them:
//
//   header (16 bytes)        u32 magic 0xBA55ED50 · u16 version (1) · u16 header size (16)
//                            u64 size of the entries that follow the header
//   entries, back to back:
//     +0   u16 kind          1 = PTX, 2 = ELF (cubin)
//     +2   u16 version       0x0101
//     +4   u32 header size   64 for ELF, 80 for PTX; the payload starts here
//     +8   u64 payload size  as stored (padded)
//     +16  u32 compressed size (0 when stored plain)
//     +24  u32 tool version  (PTX: ISA version major<<16 | minor)
//     +28  u32 arch          80 = sm_80 / compute_80
//     +40  u64 flags         0x1 64-bit, 0x10 Linux, 0x2000 LZ4-compressed, 0x8000 ZSTD-compressed
//                            (nvcc 13 compresses the PTX by default; --compress-mode changes it)
//     +56  u64 uncompressed payload size (compressed entries)
//   next entry at entry start + header size + payload size.
#include <cstring>

#include "wheel/wheel.h"

namespace opforge::wheel {

std::string FatbinImage::name() const {
  switch (kind) {
    case Kind::elf: return "sm_" + std::to_string(arch) + (suffix ? std::string(1, suffix) : "");
    case Kind::ptx: return "compute_" + std::to_string(arch) + (suffix ? std::string(1, suffix) : "");
    default: return "unknown_" + std::to_string(arch);
  }
}

namespace {

constexpr std::uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr std::uint64_t kFlagLz4 = 0x2000;
constexpr std::uint64_t kFlagZstd = 0x8000;
// An entry's flags (u64 at +40) mark arch-specific and family code: nvcc 13.0 writes 0x11 for
// sm_90, 0x100011 for sm_90a, 0x1200011 for sm_100f (and the same bits on their PTX entries).
constexpr std::uint64_t kFlagArchSpecific = 0x100000;
constexpr std::uint64_t kFlagFamily = 0x200000;

template <typename T>
T load(std::string_view bytes, std::size_t at) {
  T value{};
  std::memcpy(&value, bytes.data() + at, sizeof(T));
  return value;  // x86_64 is little-endian like the format
}

}  // namespace

Result<std::vector<FatbinImage>> parse_fatbin(std::string_view section) {
  std::vector<FatbinImage> images;
  std::size_t off = 0;
  while (off + 16 <= section.size()) {
    auto magic = load<std::uint32_t>(section, off);
    if (magic == 0) {  // alignment padding between fatbinaries
      off += 8;
      continue;
    }
    if (magic != kFatbinMagic)
      return bad_input("fatbinary at offset " + std::to_string(off) + " has magic 0x" + [&] {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%08x", magic);
        return std::string(buf);
      }() + ", expected 0xba55ed50");
    auto header_size = load<std::uint16_t>(section, off + 6);
    auto entries_size = load<std::uint64_t>(section, off + 8);
    std::size_t entry = off + header_size;
    std::size_t end = entry + entries_size;
    if (header_size < 16 || end > section.size() || end < entry)
      return bad_input("fatbinary at offset " + std::to_string(off) + " overruns its section");
    // An entry's header is at least 32 bytes (its arch is at +28): fewer left end the fatbinary,
    // as src/python/opforge_ops/nodecheck/fatbin.py reads it (a differential test holds the two
    // to the same answers).
    while (entry + 32 <= end) {
      auto kind = load<std::uint16_t>(section, entry);
      auto ehsize = load<std::uint32_t>(section, entry + 4);
      auto payload = load<std::uint64_t>(section, entry + 8);
      if (ehsize < 32 || ehsize > end - entry)
        return bad_input("fatbinary entry at offset " + std::to_string(entry) + " has a bad header size " +
                         std::to_string(ehsize));
      FatbinImage img;
      img.kind = kind == 1 ? FatbinImage::Kind::ptx : kind == 2 ? FatbinImage::Kind::elf : FatbinImage::Kind::unknown;
      img.arch = static_cast<int>(load<std::uint32_t>(section, entry + 28));
      if (img.kind == FatbinImage::Kind::ptx) {
        const auto tool = load<std::uint32_t>(section, entry + 24);
        img.ptx_isa = {static_cast<int>(tool >> 16), static_cast<int>(tool & 0xffff)};
      }
      if (ehsize >= 48) {
        auto flags = load<std::uint64_t>(section, entry + 40);
        img.compressed = (flags & (kFlagLz4 | kFlagZstd)) != 0;
        img.suffix = (flags & kFlagArchSpecific) ? 'a' : (flags & kFlagFamily) ? 'f' : 0;
      }
      img.size = payload;
      images.push_back(img);
      if (payload > end - entry - ehsize)
        return bad_input("fatbinary entry at offset " + std::to_string(entry) + " overruns its fatbinary");
      entry += ehsize + payload;
    }
    off = end;
  }
  return images;
}

}  // namespace opforge::wheel
