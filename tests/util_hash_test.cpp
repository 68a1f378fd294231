// util/hash.h: the one SHA-256, checked against the FIPS 180-2 examples and against itself fed in
// pieces (the way read_archive hashes a zip entry as it inflates).
#include <gtest/gtest.h>

#include <string>

#include "util/hash.h"

namespace opforge {
namespace {

TEST(UtilHash, KnownDigests) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(UtilHash, RawIsThirtyTwoBytesOfTheHex) {
  auto raw = sha256_raw("abc");
  ASSERT_EQ(raw.size(), 32u);
  EXPECT_EQ(to_hex(raw), sha256_hex("abc"));
  EXPECT_EQ(to_hex(std::string("\x00\x0f\xf0\xff", 4)), "000ff0ff");
}

TEST(UtilHash, StreamingEqualsOneShot) {
  std::string data;
  for (unsigned i = 0; i < 300000; ++i) data += static_cast<char>(i * 7919u % 251u);
  Sha256 h;
  for (std::size_t at = 0; at < data.size(); at += 65536) h.update(std::string_view(data).substr(at, 65536));
  EXPECT_EQ(h.finish_hex(), sha256_hex(data));

  Sha256 bytewise;
  for (char c : std::string("abc")) bytewise.update(std::string_view(&c, 1));
  EXPECT_EQ(bytewise.finish_raw(), sha256_raw("abc"));
}

}  // namespace
}  // namespace opforge
