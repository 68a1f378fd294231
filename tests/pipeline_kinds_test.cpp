// The kinds of build ([build] backend): one row each in recipe::kKinds, one entry each in
// pipeline/kinds.cpp, and nothing else in opforge that asks which kind a build is.
#include <gtest/gtest.h>

#include <string>

#include "pipeline/kinds.h"
#include "recipe/recipe.h"
#include "test_util.h"

namespace opforge {
namespace {

TEST(BuildKinds, EveryRowHasAnImplementationAndItsNameParses) {
  for (const auto& k : recipe::kKinds) {
    SCOPED_TRACE(std::string(k.name));
    EXPECT_TRUE(pipeline::has_kind(k.backend));
    EXPECT_EQ(pipeline::kind(k.backend).backend, k.backend);
    EXPECT_EQ(recipe::backend_from_name(k.name), k.backend);
    EXPECT_EQ(&recipe::build_kind(k.backend), &k);
    std::string text = "[build]\nbackend = \"" + std::string(k.name) + "\"\n";
    if (k.needs_command) text += "command = [\"python3\", \"setup.py\", \"bdist_wheel\"]\n";
    auto r = recipe::parse_file("/p/opforge.toml", text);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->build.backend, k.backend);
    EXPECT_EQ(recipe::project_build(*r), k.project_build);
  }
}

TEST(BuildKinds, AnUnknownKindNamesEveryKnownOne) {
  auto r = recipe::parse_file("/p/opforge.toml", "[build]\nbackend = \"cmake-only\"\n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
  EXPECT_NE(r.error().message.find("build.backend must be \"native\" or \"command\", not \"cmake-only\""),
            std::string::npos)
      << r.error().message;
}

TEST(BuildKinds, NeedsCommandIsCheckedForTheKindThatNeedsOne) {
  auto r = recipe::parse_file("/p/opforge.toml", "[build]\nbackend = \"command\"\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("build.backend = \"command\" needs a non-empty build.command"), std::string::npos)
      << r.error().message;
}

// A kind is asked what it does (recipe::project_build, the row's fields) or reached through its
// entry (pipeline::kind): only recipe/ (the rows, the parser) and pipeline/kinds.cpp (the entries)
// name a kind, so that adding one touches those and its own folder.
TEST(BuildKinds, OnlyTheTableAndTheEntriesNameAKind) {
  for (const auto& [rel, text] : test_util::core_sources()) {
    if (rel.starts_with("recipe/") || rel == "pipeline/kinds.cpp") continue;
    EXPECT_EQ(text.find("Backend::"), std::string::npos)
        << "src/" << rel << " names a build kind: ask recipe::project_build or the kind's row, or go through "
        << "pipeline::kind";
  }
}

}  // namespace
}  // namespace opforge
