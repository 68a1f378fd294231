// [build] cpu_target and cpu_dispatch: accepted values and the error for anything else.
#include <gtest/gtest.h>

#include "recipe/recipe.h"

namespace opforge::recipe {

TEST(RecipeCpuTarget, UnsetByDefaultAndKeptWhenKnown) {
  auto none = parse_file("/x/r.toml", "");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->build.cpu_target, "");
  EXPECT_TRUE(none->build.cpu_dispatch.empty());
  auto r = parse_file("/x/r.toml", "[build]\ncpu_target = \"x86-64-v3\"\ncpu_dispatch = [\"deepspeed/ops/*.so\"]\n");
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->build.cpu_target, "x86-64-v3");
  EXPECT_EQ(r->build.cpu_dispatch, std::vector<std::string>{"deepspeed/ops/*.so"});
  EXPECT_EQ(r->locations.at("build.cpu_target").line, 2);
  for (auto name : {"x86-64", "x86-64-v2", "x86-64-v4", "haswell", "skylake-avx512", "znver3"})
    EXPECT_TRUE(parse_file("/x/r.toml", std::string("[build]\ncpu_target = \"") + name + "\"\n")) << name;
}

TEST(RecipeCpuTarget, UnknownValueIsBadInputWithTheAcceptedList) {
  auto r = parse_file("r.toml", "[build]\ncpu_target = \"x86-64-v5\"\n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(r.error().render(),
            "r.toml:2:14: build.cpu_target: unknown CPU target \"x86-64-v5\"; did you mean \"x86-64-v4\"?\n"
            "  cpu_target = \"x86-64-v5\"\n"
            "               ^"
            "\n  hint: accepted values: x86-64, x86-64-v2, x86-64-v3, x86-64-v4, haswell, broadwell, skylake, "
            "skylake-avx512, cascadelake, icelake-server, znver2, znver3, armv8-a, armv8.2-a, armv8.4-a, armv9-a, "
            "neoverse-n1, neoverse-v1, neoverse-v2 (leave the key out to keep the "
            "project's own flags)");
}

TEST(RecipeCpuTarget, NativeIsRefusedWithWhy) {
  auto r = parse_file("r.toml", "[build]\ncpu_target = \"native\"\n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(r.error().message,
            "build.cpu_target = \"native\" names the build machine's CPU, not the CPUs the wheel runs on");
  auto wrong_type = parse_file("r.toml", "[build]\ncpu_target = 3\n");
  ASSERT_FALSE(wrong_type);
  EXPECT_EQ(wrong_type.error().where.line, 2);
}

}  // namespace opforge::recipe
