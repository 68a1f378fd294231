// The one compiler rule (compiler/host.h): which compiler a build uses, through which path, and
// the environment that follows from it.
#include <gtest/gtest.h>

#include "compiler/host.h"
#include "probe/fake_machine.h"

namespace opforge::compiler {
namespace {

HostChoice gcc11(std::optional<fs::path> shim) {
  HostChoice c;
  c.compiler.cc = "/usr/bin/gcc-11";
  c.compiler.cxx = "/usr/bin/g++-11";
  c.shim_dir = std::move(shim);
  return c;
}

TEST(CompilerHost, WithoutAShimTheCompilerItselfAndPathUntouched) {
  auto env = environment(gcc11(std::nullopt), "/usr/bin");
  ASSERT_TRUE(env);
  EXPECT_EQ(*env, (std::map<std::string, std::string>{{"CC", "/usr/bin/gcc-11"}, {"CXX", "/usr/bin/g++-11"}}));
  EXPECT_EQ(invocation(gcc11(std::nullopt)).ccbin, "/usr/bin/g++-11");
}

TEST(CompilerHost, ThroughTheShimItsFolderComesFirstOnPath) {
  auto env = environment(gcc11("/b/shim"), "/cuda/bin:/usr/bin");
  ASSERT_TRUE(env);
  EXPECT_EQ(*env, (std::map<std::string, std::string>{
                      {"CC", "/b/shim/gcc"}, {"CXX", "/b/shim/g++"}, {"PATH", "/b/shim:/cuda/bin:/usr/bin"}}));
  EXPECT_EQ(environment(gcc11("/b/shim"), "")->at("PATH"), "/b/shim");
  HostChoice clang = gcc11("/b/shim");
  clang.compiler.family = Family::clang;
  EXPECT_EQ(invocation(clang).cc, "/b/shim/cc");
  EXPECT_EQ(invocation(clang).cxx, "/b/shim/c++");
  EXPECT_EQ(invocation(clang).ccbin, "/b/shim");
}

TEST(CompilerHost, EnsureMakesTheShimOnceAndCheckFindsIt) {
  probe::FakeFileSystem fs;
  fs.add_file("/usr/bin/gcc-11", "", 0755);
  fs.add_file("/usr/bin/g++-11", "", 0755);
  auto c = gcc11("/b/shim");
  EXPECT_FALSE(check_shim(fs, c));
  ASSERT_TRUE(ensure_shim(fs, c));
  const auto made = fs.log();
  ASSERT_TRUE(ensure_shim(fs, c));  // idempotent: a second call writes nothing
  EXPECT_EQ(fs.log(), made);
  EXPECT_TRUE(check_shim(fs, c));
  for (auto [name, target] : {std::pair{"gcc", "/usr/bin/gcc-11"},
                              {"g++", "/usr/bin/g++-11"},
                              {"cc", "/usr/bin/gcc-11"},
                              {"c++", "/usr/bin/g++-11"}})
    EXPECT_EQ(*fs.read_symlink(fs::path("/b/shim") / name), fs::path(target)) << name;
  // No shim: nothing to make, nothing to check.
  EXPECT_TRUE(ensure_shim(fs, gcc11(std::nullopt)));
  EXPECT_TRUE(check_shim(fs, gcc11(std::nullopt)));
}

}  // namespace
}  // namespace opforge::compiler
