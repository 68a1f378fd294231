// The recipes the project benchmarks build (bench/projects/*.toml: flash-attn, mamba-ssm) are too
// long to build in CI; this keeps them valid recipes that say what docs/external-projects.md says.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "recipe/recipe.h"

namespace opforge {
namespace {

recipe::Recipe load_bench_recipe(const std::string& name) {
  const std::string path = std::string(OPFORGE_SOURCE_DIR) + "/bench/projects/" + name;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto r = recipe::parse_file(path, text.str());
  EXPECT_TRUE(r) << path << ": " << (r ? std::string() : r.error().render());
  return r ? *r : recipe::Recipe{};
}

TEST(BenchProjectRecipes, FlashAttnBuildsOneArchitectureAndAsksForTheSame) {
  const auto r = load_bench_recipe("flash-attn.toml");
  EXPECT_EQ(r.build.backend, recipe::Backend::command);
  EXPECT_EQ(r.arch.list, "9.0");
  EXPECT_TRUE(r.arch.enforce);
  EXPECT_EQ(r.build.env.at("FLASH_ATTENTION_FORCE_BUILD"), "TRUE");  // never a downloaded wheel
  EXPECT_EQ(r.build.env.at("FLASH_ATTN_CUDA_ARCHS"), "90");          // its own list, in line with [arch]
}

TEST(BenchProjectRecipes, MambaSsmBuildsOneArchitecture) {
  const auto r = load_bench_recipe("mamba-ssm.toml");
  EXPECT_EQ(r.build.backend, recipe::Backend::command);
  EXPECT_EQ(r.arch.list, "9.0");
  EXPECT_EQ(r.build.env.at("MAMBA_FORCE_BUILD"), "TRUE");
}

}  // namespace
}  // namespace opforge
