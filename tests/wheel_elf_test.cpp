#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "util/strings.h"
#include "wheel/wheel.h"
#include "wheel_test_util.h"

namespace opforge::wheel {
namespace {

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

TEST(WheelElf, PlainCLibraryIsManylinuxFromItsGlibcVersions) {
  // memcpy@GLIBC_2.14 and a stack protector reference make the version set non-trivial.
  auto so = testing::build_so("glibc", R"(
#include <string.h>
#include <stdio.h>
__attribute__((visibility("default"))) int opforge_t_copy(char* d, const char* s, unsigned long n) {
  memcpy(d, s, n); return snprintf(d, n, "%s", s); }
)");
  ASSERT_FALSE(so.empty());
  auto info = read_elf(so);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_TRUE(has(info->needed, "libc.so.6"));
  ASSERT_TRUE(info->version_needs.contains("libc.so.6"));
  EXPECT_TRUE(has(info->version_needs.at("libc.so.6"), "GLIBC_2.14"));
  EXPECT_TRUE(info->has_symtab);
  EXPECT_TRUE(info->fatbin.empty());
  auto d = platform_tag({{"opforge_ops/_lib/a.so", *info}});
  ASSERT_TRUE(d.glibc_minor);
  EXPECT_GE(*d.glibc_minor, 14);
  // GLIBC_2.14 needed → the oldest defined policy that covers it.
  EXPECT_EQ(d.platform, *d.glibc_minor == 14 ? "manylinux_2_17_x86_64"
                                             : "manylinux_2_" + std::to_string(*d.glibc_minor) + "_x86_64");
  EXPECT_TRUE(d.reasons.empty());
}

TEST(WheelElf, OpenMpLibraryIsPlainLinuxWithReason) {
  auto so = testing::build_so("omp", R"(
__attribute__((visibility("default"))) void opforge_t_scale(float* x, int n) {
#pragma omp parallel for
  for (int i = 0; i < n; ++i) x[i] *= 2; }
)",
                              "-fopenmp");
  ASSERT_FALSE(so.empty());
  auto info = read_elf(so);
  ASSERT_TRUE(info);
  EXPECT_TRUE(has(info->needed, "libgomp.so.1"));
  auto d = platform_tag({{"opforge_ops/_lib/libopforge_t.so", *info}});
  EXPECT_EQ(d.platform, "linux_x86_64");
  ASSERT_EQ(d.reasons.size(), 1u);
  EXPECT_EQ(d.reasons[0], "opforge_ops/_lib/libopforge_t.so needs libgomp.so.1, which is not on any manylinux policy");
}

TEST(WheelElf, LinkingLibcudaIsRefused) {
  ElfInfo info;
  info.needed = {"libcuda.so.1", "libc.so.6"};
  info.version_needs["libc.so.6"] = {"GLIBC_2.2.5"};
  auto d = platform_tag({{"x.so", info}});
  EXPECT_EQ(d.platform, "linux_x86_64");
  ASSERT_EQ(d.reasons.size(), 1u);
  EXPECT_EQ(d.reasons[0],
            "x.so links libcuda.so.1, which must be opened with dlopen (the driver "
            "is not on any manylinux policy)");
}

TEST(WheelElf, NewLibstdcxxRaisesTheGlibcFloor) {
  ElfInfo info;
  info.needed = {"libstdc++.so.6", "libc.so.6"};
  info.version_needs["libc.so.6"] = {"GLIBC_2.17"};
  info.version_needs["libstdc++.so.6"] = {"GLIBCXX_3.4.30", "CXXABI_1.3.9"};
  EXPECT_EQ(platform_tag({{"x.so", info}}).platform, "manylinux_2_35_x86_64");
  info.version_needs["libstdc++.so.6"] = {"GLIBCXX_3.4.99"};
  auto d = platform_tag({{"x.so", info}});
  EXPECT_EQ(d.platform, "linux_x86_64");
  EXPECT_EQ(d.reasons.at(0), "x.so needs GLIBCXX_3.4.99, newer than any manylinux policy allows");
}

TEST(WheelElf, TagNamesADefinedPolicy) {
  ElfInfo info;
  info.needed = {"libc.so.6"};
  info.version_needs["libc.so.6"] = {"GLIBC_2.2.5", "GLIBC_2.32"};
  EXPECT_EQ(platform_tag({{"x.so", info}}).platform, "manylinux_2_34_x86_64");
  info.version_needs["libc.so.6"] = {"GLIBC_2.34"};
  EXPECT_EQ(platform_tag({{"x.so", info}}).platform, "manylinux_2_34_x86_64");
  info.version_needs["libc.so.6"] = {"GLIBC_2.45"};
  EXPECT_EQ(platform_tag({{"x.so", info}}).platform, "manylinux_2_45_x86_64");
}

TEST(WheelElf, NoElfIsAnyWithReason) {
  auto d = platform_tag({});
  EXPECT_EQ(d.platform, "any");
  EXPECT_EQ(d.reasons, std::vector<std::string>{"the wheel holds no ELF file"});
}

TEST(WheelElf, NotElf) {
  auto r = read_elf("#!/bin/sh\n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
}

TEST(WheelFatbin, RejectsBadMagicAndOverrun) {
  std::string junk(32, '\x11');
  auto r = parse_fatbin(junk);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "fatbinary at offset 0 has magic 0x11111111, expected 0xba55ed50");
  std::string hdr("\x50\xed\x55\xba\x01\x00\x10\x00\xff\x00\x00\x00\x00\x00\x00\x00", 16);
  r = parse_fatbin(hdr);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "fatbinary at offset 0 overruns its section");
}

// Real nvcc: two SASS images and one PTX image.
TEST(WheelFatbin, FindsEachArchitectureInAnNvccLibrary) {
  const std::string nvcc = "/usr/local/cuda-13.0/bin/nvcc";
  if (!std::filesystem::exists(nvcc)) GTEST_SKIP() << "nvcc is not available at " << nvcc;
  auto dir = testing::temp_dir("nvcc");
  ASSERT_TRUE(testing::build_nvcc_library(nvcc, dir));
  auto info = read_elf(testing::slurp(dir / "k.so"));
  ASSERT_TRUE(info) << info.error().message;
  std::vector<std::string> names;
  for (const auto& img : info->fatbin) names.push_back(img.name());
  EXPECT_TRUE(has(names, "sm_80")) << strings::join(names, " ");
  EXPECT_TRUE(has(names, "sm_90"));
  EXPECT_TRUE(has(names, "compute_90"));
  EXPECT_FALSE(has(names, "compute_80"));
  EXPECT_FALSE(has(info->needed, "libcuda.so.1"));
  std::filesystem::remove_all(dir);
}

}  // namespace opforge::wheel
