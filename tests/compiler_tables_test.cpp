// The fallback tables in code must say what toolchains/*.toml say.
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
}

}  // namespace
}  // namespace opforge
