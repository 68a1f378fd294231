#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

extern "C" {
int opforge_utils_abi_version(void);
const char* opforge_utils_last_error(void);
int opforge_utils_flatten(const void* const* members, const std::size_t* sizes, std::size_t n, void* flat, int threads);
int opforge_utils_unflatten(const void* flat, void* const* members, const std::size_t* sizes, std::size_t n,
                            int threads);
}

namespace {

// Members of mixed sizes (empty ones included), flattened and unflattened with the given
// thread count; checks every byte both ways.
void round_trip(const std::vector<std::size_t>& sizes, int threads) {
  std::vector<std::vector<std::uint8_t>> members;
  std::vector<const void*> src;
  std::size_t total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    members.emplace_back(sizes[i]);
    for (std::size_t j = 0; j < sizes[i]; ++j) members[i][j] = static_cast<std::uint8_t>(i * 31 + j * 7);
    src.push_back(members[i].data());
    total += sizes[i];
  }
  std::vector<std::uint8_t> flat(total, 0xAA);
  ASSERT_EQ(opforge_utils_flatten(src.data(), sizes.data(), sizes.size(), flat.data(), threads), 0)
      << opforge_utils_last_error();
  std::size_t off = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_TRUE(std::equal(members[i].begin(), members[i].end(), flat.begin() + off)) << "member " << i;
    off += sizes[i];
  }
  std::vector<std::vector<std::uint8_t>> back;
  std::vector<void*> dst;
  for (auto s : sizes) back.emplace_back(s, 0x55);
  for (auto& b : back) dst.push_back(b.data());
  ASSERT_EQ(opforge_utils_unflatten(flat.data(), dst.data(), sizes.data(), sizes.size(), threads), 0)
      << opforge_utils_last_error();
  for (std::size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(back[i], members[i]) << "member " << i;
}

TEST(KernelsUtils, AbiVersion) { EXPECT_EQ(opforge_utils_abi_version(), 1); }

TEST(KernelsUtils, MixedSizesWithEmptyMembers) { round_trip({0, 1, 7, 0, 4096, 3, 0, 65537}, 0); }

TEST(KernelsUtils, OnlyEmptyMembersAndNoMembers) {
  round_trip({0, 0, 0}, 0);
  round_trip({}, 0);
}

TEST(KernelsUtils, LargeTotalsThreadedMatchSingleThread) {
  // Above the threading threshold: one big member, many small ones, empty ones in between.
  std::vector<std::size_t> sizes{(std::size_t{12} << 20) + 5, 0, 17, 3 << 20, 0, 1};
  for (int i = 0; i < 50; ++i) sizes.push_back(i * 1001);
  round_trip(sizes, 1);
  round_trip(sizes, 2);
  round_trip(sizes, 7);
}

TEST(KernelsUtils, NullMemberIsAnErrorWithItsIndex) {
  std::vector<std::uint8_t> a(4), flat(8);
  const void* src[] = {a.data(), nullptr};
  std::size_t sizes[] = {4, 4};
  EXPECT_EQ(opforge_utils_flatten(src, sizes, 2, flat.data(), 1), -EINVAL);
  EXPECT_EQ(std::string(opforge_utils_last_error()), "opforge_utils_flatten: member 1 is null");
}

}  // namespace
