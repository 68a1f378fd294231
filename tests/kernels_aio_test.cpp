#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "aio.h"

namespace {

namespace fs = std::filesystem;

std::vector<std::uint8_t> pattern(std::size_t n, unsigned seed) {
  std::vector<std::uint8_t> v(n);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

class KernelsAio : public ::testing::Test {
 protected:
  // On the disk the build runs on (O_DIRECT works there); /dev/shm for tmpfs.
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("opforge_aio_test." + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// Writes `size` bytes from a buffer at `offset` bytes past a 4096-aligned address and reads them
// back into another buffer at the same misalignment.
void round_trip(const fs::path& file, std::size_t size, std::size_t offset, bool expect_direct, std::uint64_t block = 0,
                int depth = 0) {
  SCOPED_TRACE("size " + std::to_string(size) + " offset " + std::to_string(offset));
  auto data = pattern(size, static_cast<unsigned>(size));
  void* raw_w = nullptr;
  void* raw_r = nullptr;
  ASSERT_EQ(posix_memalign(&raw_w, 4096, size + offset + 1), 0);
  ASSERT_EQ(posix_memalign(&raw_r, 4096, size + offset + 1), 0);
  auto* w = static_cast<std::uint8_t*>(raw_w) + offset;
  auto* r = static_cast<std::uint8_t*>(raw_r) + offset;
  std::copy(data.begin(), data.end(), w);
  std::fill(r, r + size, 0xEE);
  int direct = -1;
  ASSERT_EQ(opforge_aio_write(file.c_str(), w, size, block, depth, 0, &direct), 0) << opforge_aio_last_error();
  EXPECT_EQ(direct, expect_direct ? 1 : 0) << opforge_aio_last_note();
  EXPECT_EQ(fs::file_size(file), size);
  std::uint64_t got_size = 0;
  ASSERT_EQ(opforge_aio_file_size(file.c_str(), &got_size), 0);
  EXPECT_EQ(got_size, size);
  ASSERT_EQ(opforge_aio_read(file.c_str(), r, size, block, depth, 0, &direct), 0) << opforge_aio_last_error();
  EXPECT_EQ(direct, expect_direct ? 1 : 0);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), r));
  std::free(raw_w);
  std::free(raw_r);
}

TEST_F(KernelsAio, LibaioIsAvailable) {
  ASSERT_EQ(opforge_aio_available(), 0) << opforge_aio_last_error();
  EXPECT_EQ(opforge_aio_abi_version(), 1);
}

TEST_F(KernelsAio, RoundTripSizesWithODirect) {
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{4095}, std::size_t{4096},
                           (std::size_t{1} << 20) + 3, std::size_t{64} << 20})
    round_trip(dir_ / "f", size, 0, true);
}

TEST_F(KernelsAio, RoundTripUnalignedBuffers) {
  for (std::size_t size :
       {std::size_t{1}, std::size_t{4095}, std::size_t{4096}, (std::size_t{1} << 20) + 3, std::size_t{5} << 20})
    for (std::size_t offset : {1, 7, 512}) round_trip(dir_ / "f", size, offset, true);
}

TEST_F(KernelsAio, ManySmallRequestsInFlight) {
  round_trip(dir_ / "f", (std::size_t{3} << 20) + 4097, 0, true, 8192, 4);
  round_trip(dir_ / "f", (std::size_t{3} << 20) + 4097, 3, true, 8192, 4);
}

// tmpfs refused O_DIRECT at open (EINVAL) before Linux 6.6 and accepts it since: either way the
// round trip must work, and when it fell back the note must say so and name the file.
TEST_F(KernelsAio, TmpfsRoundTripAndFallbackNote) {
  fs::path shm = fs::path("/dev/shm") / ("opforge_aio_test." + std::to_string(::getpid()));
  for (std::size_t size : {std::size_t{0}, std::size_t{4095}, (std::size_t{1} << 20) + 3}) {
    for (std::size_t offset : {0, 1}) {
      auto data = pattern(size, 9);
      std::vector<std::uint8_t> src(size + offset), back(size + offset, 0xEE);
      std::copy(data.begin(), data.end(), src.begin() + offset);
      int wdirect = -1, rdirect = -1;
      ASSERT_EQ(opforge_aio_write(shm.c_str(), src.data() + offset, size, 0, 0, 0, &wdirect), 0)
          << opforge_aio_last_error();
      std::string note = opforge_aio_last_note();
      if (wdirect == 0) {
        EXPECT_NE(note.find("refuses O_DIRECT"), std::string::npos) << note;
        EXPECT_NE(note.find(shm.string()), std::string::npos) << note;
      } else {
        EXPECT_EQ(note, "");
      }
      ASSERT_EQ(opforge_aio_read(shm.c_str(), back.data() + offset, size, 0, 0, 0, &rdirect), 0)
          << opforge_aio_last_error();
      EXPECT_EQ(rdirect, wdirect);
      EXPECT_TRUE(std::equal(data.begin(), data.end(), back.begin() + offset));
      EXPECT_EQ(fs::file_size(shm), size);
    }
  }
  fs::remove(shm);
}

TEST_F(KernelsAio, BufferedFlagSkipsODirect) {
  auto data = pattern(10000, 3);
  int direct = -1;
  fs::path f = dir_ / "b";
  ASSERT_EQ(opforge_aio_write(f.c_str(), data.data(), data.size(), 0, 0, OPFORGE_AIO_BUFFERED, &direct), 0);
  EXPECT_EQ(direct, 0);
  std::vector<std::uint8_t> back(data.size());
  ASSERT_EQ(opforge_aio_read(f.c_str(), back.data(), back.size(), 0, 0, OPFORGE_AIO_BUFFERED, &direct), 0);
  EXPECT_EQ(back, data);
}

TEST_F(KernelsAio, MissingFileNamesPathAndErrno) {
  std::string path = (dir_ / "missing.bin").string();
  std::vector<char> buf(16);
  EXPECT_EQ(opforge_aio_read(path.c_str(), buf.data(), buf.size(), 0, 0, 0, nullptr), -ENOENT);
  EXPECT_EQ(std::string(opforge_aio_last_error()),
            "opforge_aio_read: cannot open " + path + " for reading: No such file or directory (errno 2)");
  std::uint64_t size = 0;
  EXPECT_EQ(opforge_aio_file_size(path.c_str(), &size), -ENOENT);
  EXPECT_NE(std::string(opforge_aio_last_error()).find(path), std::string::npos);
}

TEST_F(KernelsAio, UnwritableTargetNamesPathAndErrno) {
  // Root ignores permission bits, so use a path whose parent is a regular file.
  fs::path parent = dir_ / "plain_file";
  std::ofstream(parent) << "x";
  std::string path = (parent / "out.bin").string();
  std::vector<char> buf(100, 'a');
  EXPECT_EQ(opforge_aio_write(path.c_str(), buf.data(), buf.size(), 0, 0, 0, nullptr), -ENOTDIR);
  EXPECT_EQ(std::string(opforge_aio_last_error()),
            "opforge_aio_write: cannot open " + path + " for writing: Not a directory (errno 20)");
}

TEST_F(KernelsAio, ShortReadIsAnErrorNeverPartial) {
  fs::path f = dir_ / "short";
  auto data = pattern(5000, 1);
  ASSERT_EQ(opforge_aio_write(f.c_str(), data.data(), data.size(), 0, 0, 0, nullptr), 0);
  std::vector<std::uint8_t> buf(8192);
  EXPECT_EQ(opforge_aio_read(f.c_str(), buf.data(), buf.size(), 0, 0, 0, nullptr), -EIO);
  EXPECT_EQ(std::string(opforge_aio_last_error()),
            "opforge_aio_read: short read: " + f.string() + " has 5000 bytes, 8192 were asked for");
}

TEST_F(KernelsAio, BlockSizeMustBeAligned) {
  fs::path f = dir_ / "x";
  char c = 'x';
  EXPECT_EQ(opforge_aio_write(f.c_str(), &c, 1, 1000, 0, 0, nullptr), -EINVAL);
  EXPECT_NE(std::string(opforge_aio_last_error()).find("block size 1000 is not a multiple of 4096"), std::string::npos);
}

}  // namespace
