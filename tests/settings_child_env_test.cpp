// The one builder of a child's environment (settings/child_env.h): its layers, and that every
// child's environment is made through it.
#include <gtest/gtest.h>

#include "probe/fake_machine.h"
#include "settings/child_env.h"
#include "test_util.h"

namespace opforge {
namespace {

using settings::ChildEnv;

TEST(ChildEnv, LayersFlagsAndPaths) {
  ChildEnv env({{"PATH", "/usr/bin"}, {"CFLAGS", "-O2"}, {"MAX_JOBS", "8"}});
  env.layer({{"MAX_JOBS", "2"}, {"CUDA_HOME", "/cuda"}, {"OTHER", "x"}}, {"CUDA_HOME", "MAX_JOBS", "ABSENT"})
      .append_flags("CFLAGS", "-g0")
      .append_flags("LDFLAGS", "-Wl,--build-id=none")
      .prepend_path("PATH", "/wrap")
      .prepend_path("PYTHONPATH", "/watch")
      .set_default("MAX_JOBS", "16")
      .set_default("SKBUILD_BUILD_DIR", "build/skbuild");
  const auto& v = env.vars();
  EXPECT_EQ(v.at("MAX_JOBS"), "2");
  EXPECT_EQ(v.at("CUDA_HOME"), "/cuda");
  EXPECT_FALSE(env.has("OTHER"));
  EXPECT_FALSE(env.has("ABSENT"));
  EXPECT_EQ(v.at("CFLAGS"), "-O2 -g0");
  EXPECT_EQ(v.at("LDFLAGS"), "-Wl,--build-id=none");
  EXPECT_EQ(v.at("PATH"), "/wrap:/usr/bin");
  EXPECT_EQ(v.at("PYTHONPATH"), "/watch");
  EXPECT_EQ(v.at("SKBUILD_BUILD_DIR"), "build/skbuild");
  EXPECT_EQ(env.value("NOT_SET"), "");
  env.erase("CFLAGS");
  EXPECT_FALSE(env.has("CFLAGS"));
}

// The table decides what a child starts from: a secret reaches another opforge only.
TEST(ChildEnv, StartsFromTheTablesShareForThatChild) {
  probe::FakeEnvironment caller({{"OPFORGE_SCHEDULER_TOKEN", "s3cret"}, {"HOME", "/home/u"}, {"CC", "gcc"}});
  EXPECT_FALSE(ChildEnv(caller, settings::Child::command).has("OPFORGE_SCHEDULER_TOKEN"));
  EXPECT_TRUE(ChildEnv(caller, settings::Child::command).has("HOME"));
  EXPECT_TRUE(ChildEnv(caller, settings::Child::opforge).has("OPFORGE_SCHEDULER_TOKEN"));
  EXPECT_FALSE(ChildEnv(caller, settings::Child::compile).has("HOME"));
}

// Every child's environment is made by ChildEnv: no code outside settings/ takes the caller's
// environment for a child another way.
TEST(ChildEnv, IsTheOnlyWayToAChildsEnvironment) {
  for (const auto& [rel, text] : test_util::core_sources()) {
    if (rel.starts_with("settings/")) continue;
    for (const char* raw : {"settings::everything(", "settings::child_environment("})
      EXPECT_EQ(text.find(raw), std::string::npos) << "src/" << rel << " uses " << raw << ": build the environment "
                                                   << "with settings::ChildEnv";
  }
}

}  // namespace
}  // namespace opforge
