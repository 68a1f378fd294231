// The fallback tables are compiled in from toolchains/*.toml: what the code uses must be what the
// files on disk say (a stale build would not), plus spot checks against docs/reference.md §1 and §2.
#include <gtest/gtest.h>

#include <toml++/toml.h>

#include "compiler/resolve.h"
#include "devices/resolve.h"

namespace opforge {
namespace {

TEST(CompilerTables, CodeMatchesToolchainsToml) {
  auto t = toml::parse_file(std::string(OPFORGE_SOURCE_DIR) + "/toolchains/cuda-host-compilers.toml");
  int rows = 0;
  for (auto& row : *t["limit"].as_array()) {
    auto& r = *row.as_table();
    auto v = *parse_version(*r["from"].value<std::string>());
    auto l = compiler::table_limits(v);
    EXPECT_EQ(l.max_gcc, *r["max_gcc"].value<int>()) << v.str(3);
    EXPECT_EQ(l.max_clang, *r["max_clang"].value<int>()) << v.str(3);
    ++rows;
  }
  EXPECT_EQ(rows, 15);
  EXPECT_EQ(compiler::table_limits(Version{13, 0, 88}).max_gcc, 15);
  EXPECT_EQ(compiler::table_limits(Version{11, 4, 0}).max_gcc, 10);  // 11.4.0 is still the 11.2 row
  EXPECT_EQ(compiler::table_limits(Version{11, 4, 1}).max_gcc, 11);
  EXPECT_EQ(compiler::table_limits(Version{12, 4, 0}).max_clang, 17);
  EXPECT_EQ(compiler::table_limits(Version{9, 2, 0}).max_gcc, 0);  // older than the table: unknown
}

TEST(DevicesTables, CodeMatchesToolchainsToml) {
  auto t = toml::parse_file(std::string(OPFORGE_SOURCE_DIR) + "/toolchains/cuda-gpu-targets.toml");
  for (auto& row : *t["targets"].as_array()) {
    auto& r = *row.as_table();
    auto v = *parse_version(*r["from"].value<std::string>());
    std::vector<std::string> want, got;
    for (auto& sm : *r["sm"].as_array()) want.push_back(std::to_string(*sm.value<int>()));
    for (auto& a : devices::table_accepted(v)) got.push_back(a.sm());
    EXPECT_EQ(got, want) << v.str();
  }
  auto has = [](const Version& v, const std::string& sm) {
    for (auto& a : devices::table_accepted(v))
      if (a.sm() == sm) return true;
    return false;
  };
  EXPECT_FALSE(has(Version{13, 0, 0}, "70"));  // CUDA 13 dropped Volta
  EXPECT_TRUE(has(Version{12, 9, 0}, "70"));
  EXPECT_TRUE(has(Version{11, 8, 0}, "90"));
  EXPECT_FALSE(has(Version{11, 7, 0}, "90"));
  EXPECT_TRUE(devices::table_accepted(Version{9, 2, 0}).empty());
}

}  // namespace
}  // namespace opforge
