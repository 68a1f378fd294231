// verify's rebuild policy on the fake machine: what check_record refuses, and the exact list of
// what a rebuild would run, before anything runs.
#include "pipeline/verify.h"

#include <gtest/gtest.h>

#include "probe/fake_machine.h"
#include "util/hash.h"

namespace opforge::pipeline {
namespace {

using V = std::vector<std::string>;

// A folder that exists on no machine: the source is "not from git" for libgit2 as well.
const std::string kRecipe = "/opforge-verify-test/recipes/default.toml";
const std::string kText = "[package]\nversion = \"0.1.0\"\n[source]\npath = \"..\"\n";
const std::string kPath = "/d/x.whl.opforge-record.json";

record::Record record_for(const std::string& text) {
  record::Record r;
  r.recipe_path = kRecipe;
  r.recipe_sha256 = sha256_hex(text);
  return r;
}

TEST(PipelineCheckRecord, DescribesWhatTheRebuildRuns) {
  probe::FakeMachine fm;
  fm.fs.add_file(kRecipe, kText);
  auto rec = record_for(kText);
  rec.environment = {{"MAX_JOBS", "2"}, {"TORCH_CUDA_ARCH_LIST", "8.0 9.0"}};
  auto c = check_record(fm.machine(), kPath, rec);
  ASSERT_TRUE(c) << c.error().render();
  EXPECT_EQ(c->recipe, kRecipe);
  EXPECT_EQ(c->description,
            (V{"recipe  " + kRecipe + " (sha256 matches the record)",
               "source  /opforge-verify-test (not from git: the record holds no hash of its files, so they "
               "are not checked)",
               "runs    ninja and the compilers on the ops' sources in that source tree",
               "runs    python3  (cuda.python, asked for torch's CUDA version)",
               "env     MAX_JOBS=2  (from the record)", "env     TORCH_CUDA_ARCH_LIST='8.0 9.0'  (from the record)"}));
  EXPECT_TRUE(fm.proc.calls().empty()) << "checking runs nothing";
}

TEST(PipelineCheckRecord, ACommandRecipeShowsItsCommandAndCompiler) {
  probe::FakeMachine fm;
  const std::string text = kText +
                           "[cuda]\nversion = \"13.0\"\n[compiler]\nhost = \"/usr/bin/g++-12\"\n"
                           "[build]\nbackend = \"command\"\ncommand = [\"python3\", \"setup.py\", \"bdist_wheel\"]\n";
  fm.fs.add_file(kRecipe, text);
  auto c = check_record(fm.machine(), kPath, record_for(text));
  ASSERT_TRUE(c) << c.error().render();
  ASSERT_EQ(c->description.size(), 4u);
  EXPECT_EQ(c->description[2], "runs    python3 setup.py bdist_wheel  (build.command)");
  EXPECT_EQ(c->description[3], "runs    /usr/bin/g++-12  (compiler.host)");
}

TEST(PipelineCheckRecord, RefusesARecordWithoutRecipeOrHash) {
  probe::FakeMachine fm;
  record::Record none;
  auto c = check_record(fm.machine(), kPath, none);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(c.error().message, kPath + ": the record names no recipe (inputs.recipe.path)");
  none.recipe_path = kRecipe;
  c = check_record(fm.machine(), kPath, none);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, kPath + ": the record holds no recipe hash (inputs.recipe.sha256)");
}

TEST(PipelineCheckRecord, RefusesAMissingOrChangedRecipe) {
  probe::FakeMachine fm;
  auto rec = record_for(kText);
  auto c = check_record(fm.machine(), kPath, rec);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().kind, ErrorKind::bad_input);
  EXPECT_TRUE(c.error().message.starts_with(kPath + ": the recipe the record names cannot be read: "))
      << c.error().message;
  EXPECT_EQ(c.error().hint, "verify rebuilds from the recipe the record names; restore it there");

  fm.fs.add_file(kRecipe, kText + "# changed\n");
  c = check_record(fm.machine(), kPath, rec);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, kPath + ": the recipe " + kRecipe +
                                   " has changed since the record was written (sha256 " +
                                   sha256_hex(kText + "# changed\n") + ", the record holds " + rec.recipe_sha256 + ")");
  EXPECT_EQ(c.error().hint, "verify rebuilds from the recipe as recorded; restore that version of it");
}

TEST(PipelineCheckRecord, RefusesACommitWhenTheSourceIsNotAGitTree) {
  probe::FakeMachine fm;
  fm.fs.add_file(kRecipe, kText);
  auto rec = record_for(kText);
  rec.source.commit = std::string(40, 'a');
  auto c = check_record(fm.machine(), kPath, rec);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(c.error().message, kPath + ": the record names commit " + rec.source.commit +
                                   ", but the source /opforge-verify-test is not a git work tree");
}

TEST(PipelineCheckRecord, AGitSourceIsFetchedAndPinnedToTheRecordedCommit) {
  probe::FakeMachine fm;
  const std::string text =
      "[package]\nversion = \"0.1.0\"\n[source]\ngit = \"https://example.org/ops.git\"\nrev = \"v1\"\n";
  fm.fs.add_file(kRecipe, text);
  auto rec = record_for(text);
  rec.source.commit = std::string(40, 'b');
  auto c = check_record(fm.machine(), kPath, rec);
  ASSERT_TRUE(c) << c.error().render();
  EXPECT_EQ(c->description[1],
            "source  git https://example.org/ops.git rev v1 (fetched; the rebuild refuses any "
            "commit but " +
                rec.source.commit + ")");
}

TEST(PipelineRebuild, EveryChildSeesTheRecordedEnvironmentAndNotTheUsers) {
  // The verifying user has DS_BUILD_AIO and CFLAGS set; the record has neither (they were unset
  // when it was made) but DS_BUILD_OPS=0: every process the rebuild starts must see exactly that.
  probe::FakeMachine fm;
  fm.fs.add_file(kRecipe, kText);
  fm.fs.add_directory("/opforge-verify-test/src/kernels");
  fm.env.set("PATH", "/usr/bin");
  fm.env.set("DS_BUILD_AIO", "1");
  fm.env.set("CFLAGS", "-O0");
  auto rec = record_for(kText);
  rec.environment = {{"DS_BUILD_OPS", "0"}};
  RebuildCheck checked{kRecipe, {}, std::nullopt};
  (void)rebuild_and_compare(fm.machine(), kPath, rec, checked);
  ASSERT_FALSE(fm.proc.calls().empty()) << "the rebuild starts its torch probe at least";
  for (const auto& call : fm.proc.calls()) {
    ASSERT_TRUE(call.env.has_value()) << call.argv[0] << " would inherit opforge's own environment";
    EXPECT_FALSE(call.env->contains("DS_BUILD_AIO")) << call.argv[0];
    EXPECT_FALSE(call.env->contains("CFLAGS")) << call.argv[0];
    EXPECT_EQ(call.env->at("DS_BUILD_OPS"), "0") << call.argv[0];
    EXPECT_EQ(call.env->at("PATH").substr(call.env->at("PATH").size() - 8), "/usr/bin") << call.argv[0];
  }
}

}  // namespace
}  // namespace opforge::pipeline
