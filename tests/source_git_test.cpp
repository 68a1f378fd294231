// Real repositories made with the git CLI in temporary folders; no network.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "probe/machine.h"
#include "source/source.h"

namespace fs = std::filesystem;
using namespace opforge;

namespace {

probe::FileSystem& disk() { return probe::real_machine().fs; }

std::string sh(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  ::pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

class SourceGit : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("opforge-source-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    repo = dir / "upstream";
    fs::create_directories(repo);
    git("init -q -b main");
    git("config user.email t@example.org");
    git("config user.name test");
    write(repo / "ops" / "a.cpp", "int a;\n");
    write(repo / ".gitignore", "*.o\n");
    git("add -A");
    commit("first", "2024-01-02T03:04:05Z");
    first = git("rev-parse HEAD");
    git("tag -a v1.0 -m v1.0");
    write(repo / "ops" / "a.cpp", "int a = 2;\n");
    git("add -A");
    commit("second", "2024-02-02T03:04:05Z");
    second = git("rev-parse HEAD");
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string git(const std::string& args) { return sh("git -C '" + repo.string() + "' " + args + " 2>&1"); }
  void commit(const std::string& msg, const std::string& date) {
    sh("cd '" + repo.string() + "' && GIT_AUTHOR_DATE=" + date + " GIT_COMMITTER_DATE=" + date + " git commit -q -m " +
       msg);
  }
  fs::path dir, repo;
  std::string first, second;
};

}  // namespace

TEST_F(SourceGit, InspectCleanTree) {
  auto info = source::inspect(disk(), repo);
  ASSERT_TRUE(info) << info.error().render();
  ASSERT_TRUE(info->has_value());
  EXPECT_EQ((*info)->commit, second);
  EXPECT_EQ((*info)->commit.size(), 40u);
  EXPECT_EQ((*info)->short_commit, second.substr(0, 7));
  EXPECT_FALSE((*info)->dirty);
  EXPECT_EQ((*info)->commit_time, 1706843045);  // 2024-02-02T03:04:05Z
  EXPECT_EQ(fs::weakly_canonical((*info)->root), fs::weakly_canonical(repo));
  EXPECT_EQ((*info)->resolved_from, "HEAD");
}

TEST_F(SourceGit, InspectDirtyModifiedStagedUntrackedButNotIgnored) {
  write(repo / "ops" / "x.o", "ignored");
  EXPECT_FALSE((**source::inspect(disk(), repo)).dirty) << "ignored files do not make a tree dirty";
  write(repo / "new.txt", "untracked");
  EXPECT_TRUE((**source::inspect(disk(), repo)).dirty) << "untracked files count";
  fs::remove(repo / "new.txt");
  write(repo / "ops" / "a.cpp", "int a = 3;\n");
  EXPECT_TRUE((**source::inspect(disk(), repo)).dirty);
  git("add -A");
  EXPECT_TRUE((**source::inspect(disk(), repo)).dirty) << "staged changes count";
}

TEST_F(SourceGit, InspectSubfolderOnlySeesItsOwnChanges) {
  write(repo / "docs" / "notes.txt", "elsewhere");
  auto info = source::inspect(disk(), repo / "ops");
  ASSERT_TRUE(info && info->has_value());
  EXPECT_FALSE((*info)->dirty);
  EXPECT_EQ((*info)->commit, second);
  write(repo / "ops" / "b.cpp", "int b;\n");
  EXPECT_TRUE((**source::inspect(disk(), repo / "ops")).dirty);
}

TEST_F(SourceGit, InspectNonGitFolderIsNoCommit) {
  fs::path plain = dir / "plain";
  fs::create_directories(plain);
  auto info = source::inspect(disk(), plain);
  ASSERT_TRUE(info) << info.error().render();
  EXPECT_FALSE(info->has_value());
}

TEST_F(SourceGit, FetchTagBranchCommitAndReuseClone) {
  fs::path cache = dir / "cache";
  auto tag = source::fetch(disk(), repo.string(), "v1.0", cache);
  ASSERT_TRUE(tag) << tag.error().render();
  EXPECT_EQ(tag->commit, first);
  EXPECT_EQ(tag->resolved_from, "tag");
  EXPECT_FALSE(tag->reused_clone);
  EXPECT_EQ(tag->commit_time, 1704164645);
  std::ifstream a(tag->root / "ops" / "a.cpp");
  std::string text((std::istreambuf_iterator<char>(a)), {});
  EXPECT_EQ(text, "int a;\n");

  auto branch = source::fetch(disk(), repo.string(), "main", cache);
  ASSERT_TRUE(branch) << branch.error().render();
  EXPECT_EQ(branch->commit, second);
  EXPECT_EQ(branch->resolved_from, "branch");
  EXPECT_TRUE(branch->reused_clone) << "the second fetch must not clone again";
  EXPECT_NE(branch->root, tag->root);

  auto by_id = source::fetch(disk(), "file://" + repo.string(), first.substr(0, 10), cache);
  ASSERT_TRUE(by_id) << by_id.error().render();
  EXPECT_EQ(by_id->commit, first);
  EXPECT_EQ(by_id->resolved_from, "commit");

  // One clone per url in the cache.
  int clones = 0;
  for (auto& e : fs::directory_iterator(cache)) clones += fs::exists(e.path() / "repo.git" / "HEAD");
  EXPECT_EQ(clones, 2);  // the path and the file:// url are different keys
}

TEST_F(SourceGit, FetchPicksUpNewCommitsOfABranchAndMissingRevs) {
  fs::path cache = dir / "cache";
  ASSERT_TRUE(source::fetch(disk(), repo.string(), "v1.0", cache));
  write(repo / "ops" / "c.cpp", "int c;\n");
  git("add -A");
  commit("third", "2024-03-02T03:04:05Z");
  git("tag v2.0");
  std::string third = git("rev-parse HEAD");
  auto branch = source::fetch(disk(), repo.string(), "main", cache);
  ASSERT_TRUE(branch) << branch.error().render();
  EXPECT_EQ(branch->commit, third);
  EXPECT_TRUE(branch->reused_clone);
  auto tag = source::fetch(disk(), repo.string(), "v2.0", cache);
  ASSERT_TRUE(tag) << tag.error().render();
  EXPECT_EQ(tag->commit, third);
  EXPECT_TRUE(fs::exists(tag->root / "ops" / "c.cpp"));
}

TEST_F(SourceGit, FetchUnknownRevListsTagsAndBranches) {
  auto r = source::fetch(disk(), repo.string(), "v9.9", dir / "cache");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
  EXPECT_NE(r.error().message.find("\"v9.9\""), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().hint, "tags: v1.0; branches: main");
}

TEST_F(SourceGit, FetchBadUrl) {
  auto r = source::fetch(disk(), (dir / "nope").string(), "v1.0", dir / "cache");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
  EXPECT_NE(r.error().message.find("no such repository"), std::string::npos) << r.error().message;
  auto r2 = source::fetch(disk(), "file://" + (dir / "nope").string(), "v1.0", dir / "cache");
  ASSERT_FALSE(r2);
  EXPECT_EQ(r2.error().kind, ErrorKind::bad_input);
  EXPECT_NE(r2.error().message.find("cannot clone"), std::string::npos) << r2.error().message;
  EXPECT_FALSE(fs::exists(dir / "cache" / source::cache_key("file://" + (dir / "nope").string()) / "repo.git"));
}

TEST_F(SourceGit, ReleaseRefusesDirtyTreesAndMovingRevs) {
  write(repo / "stray.txt", "x");
  auto dirty = **source::inspect(disk(), repo);
  auto r = source::check_release(dirty, "HEAD", false, std::nullopt);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
  EXPECT_NE(r.error().message.find("uncommitted or untracked"), std::string::npos);

  fs::path cache = dir / "cache";
  auto branch = *source::fetch(disk(), repo.string(), "main", cache);
  auto moving = source::check_release(branch, "main", branch.resolved_from == "branch", std::nullopt);
  ASSERT_FALSE(moving);
  EXPECT_NE(moving.error().message.find("is a branch"), std::string::npos);
  EXPECT_TRUE(source::check_release(branch, "main", true, second));
  EXPECT_TRUE(source::check_release(branch, "main", true, second.substr(0, 7)));
  auto other = source::check_release(branch, "main", true, first);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find(first), std::string::npos);

  auto tag = *source::fetch(disk(), repo.string(), "v1.0", cache);
  EXPECT_TRUE(source::check_release(tag, "v1.0", false, std::nullopt));
  EXPECT_FALSE(source::check_release(source::Info{}, "", false, std::nullopt));
}

TEST(SourceCacheKey, StableAndReadable) {
  EXPECT_EQ(source::cache_key("https://github.com/microsoft/DeepSpeed.git").substr(0, 10), "DeepSpeed-");
  EXPECT_EQ(source::cache_key("x"), source::cache_key("x"));
  EXPECT_NE(source::cache_key("https://a/r.git"), source::cache_key("https://b/r.git"));
  EXPECT_EQ(source::cache_key("git@host:org/ops.git").substr(0, 4), "ops-");
}
