// Trees keep their links in: a scratch tree resumed, a wheel's folder packed, a project's headers
// scanned, a command's wheel found, the cache pruned — none follows a link out of the tree opforge
// owns, and each names the link it refused. On the real file system (links are the point).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>

#include "cache/cache.h"
#include "compile/command/wheel_match.h"
#include "compile/pch/pch.h"
#include "compile/scratch/scratch.h"
#include "probe/links.h"
#include "probe/machine.h"
#include "test_util.h"
#include "wheel/wheel.h"

namespace opforge {
namespace {

namespace fs = std::filesystem;

struct Tmp {
  fs::path dir;
  explicit Tmp(const std::string& tag) : dir(test_util::temp_dir(tag)) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Tmp() { fs::remove_all(dir); }
};

TEST(ProbeLinks, ALinkOutIsFoundOnThePathAndInTheTree) {
  Tmp t("links");
  auto m = probe::real_machine();
  fs::create_directories(t.dir / "tree/pkg");
  fs::create_directories(t.dir / "elsewhere");
  test_util::spit(t.dir / "elsewhere/secret.txt", "secret");
  fs::create_symlink("pkg", t.dir / "tree/inside");                        // stays in
  fs::create_symlink(t.dir / "tree/pkg", t.dir / "tree/absolute-inside");  // stays in, absolute
  EXPECT_FALSE(probe::link_out_in_tree(m.fs, t.dir / "tree"));
  fs::create_symlink("../../elsewhere", t.dir / "tree/pkg/out");
  auto out = probe::link_out_in_tree(m.fs, t.dir / "tree");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->link, t.dir / "tree/pkg/out");
  EXPECT_EQ(out->target, fs::canonical(t.dir / "elsewhere"));
  auto on = probe::link_out_on_path(m.fs, t.dir / "tree", t.dir / "tree/pkg/out/secret.txt");
  ASSERT_TRUE(on);
  EXPECT_EQ(on->link, t.dir / "tree/pkg/out");
  EXPECT_FALSE(probe::link_out_on_path(m.fs, t.dir / "tree", t.dir / "tree/inside"));
  // A dangling link out is still out.
  fs::create_symlink("/nonexistent/opforge", t.dir / "tree/dangling");
  EXPECT_TRUE(probe::link_out_on_path(m.fs, t.dir / "tree", t.dir / "tree/dangling"));
}

TEST(ProbeLinks, AResumedTreeWhosePackageFolderIsALinkOutIsCopiedAfreshNamingTheLink) {
  Tmp t("resume-link");
  auto m = probe::real_machine();
  fs::create_directories(t.dir / "src/pkg");
  test_util::spit(t.dir / "src/setup.py", "setup()\n");
  test_util::spit(t.dir / "src/pkg/__init__.py", "x = 1\n");
  fs::create_directories(t.dir / "elsewhere");
  test_util::spit(t.dir / "elsewhere/stolen.py", "secret = 1\n");
  const compile::ScratchResume resume{[](const fs::path&) { return std::string("k"); }};
  auto first = compile::make_scratch_tree(m, t.dir / "src", t.dir / "cache", {}, resume);
  ASSERT_TRUE(first) << first.error().render();
  const fs::path root = first->root;
  first->lock.reset();
  // The kept tree's package folder replaced by a link to a folder elsewhere.
  fs::remove_all(root / "pkg");
  fs::create_symlink(t.dir / "elsewhere", root / "pkg");
  auto again = compile::make_scratch_tree(m, t.dir / "src", t.dir / "cache", {}, resume);
  ASSERT_TRUE(again) << again.error().render();
  EXPECT_FALSE(again->resumed);
  EXPECT_EQ(again->not_why, "'" + (root / "pkg").string() + "' is a symbolic link to '" +
                                fs::canonical(t.dir / "elsewhere").string() + "', out of the build tree");
  // Made again: a real folder with the source's files; the folder elsewhere untouched.
  EXPECT_FALSE(fs::is_symlink(root / "pkg"));
  EXPECT_EQ(test_util::slurp(root / "pkg/__init__.py"), "x = 1\n");
  EXPECT_FALSE(fs::exists(root / "pkg/stolen.py"));
  EXPECT_EQ(test_util::slurp(t.dir / "elsewhere/stolen.py"), "secret = 1\n");
  EXPECT_FALSE(fs::exists(t.dir / "elsewhere/__init__.py"));
}

TEST(ProbeLinks, AWheelNeverPacksAFileFromOutsideItsFolder) {
  Tmp t("collect-link");
  auto m = probe::real_machine();
  fs::create_directories(t.dir / "pkg/sub");
  test_util::spit(t.dir / "pkg/a.py", "a\n");
  fs::create_symlink("../a.py", t.dir / "pkg/sub/a_again.py");  // inside: packed as the file
  auto files = wheel::collect_files(m.fs, t.dir / "pkg", "p");
  ASSERT_TRUE(files) << files.error().render();
  EXPECT_EQ(files->size(), 2u);
  test_util::spit(t.dir / "passwd", "root:x:0:0\n");
  fs::create_symlink(t.dir / "passwd", t.dir / "pkg/sub/passwd");
  auto out = wheel::collect_files(m.fs, t.dir / "pkg", "p");
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(out.error().message, (t.dir / "pkg/sub/passwd").string() + " is a symbolic link to " +
                                     (t.dir / "passwd").string() + ", outside " + (t.dir / "pkg").string() +
                                     ": a wheel holds only the folder's own files");
}

TEST(ProbeLinks, ACommandsWheelFoundThroughALinkOutIsRefused) {
  Tmp t("wheel-link");
  auto m = probe::real_machine();
  fs::create_directories(t.dir / "tree");
  fs::create_directories(t.dir / "elsewhere");
  test_util::spit(t.dir / "elsewhere/x-1.0-py3-none-any.whl", "PK");
  fs::create_symlink(t.dir / "elsewhere", t.dir / "tree/dist");
  auto w = compile::made_wheel(m.fs, t.dir / "tree", "dist/*.whl", t.dir / "command.log");
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().message, "the wheel " + (t.dir / "tree/dist/x-1.0-py3-none-any.whl").string() +
                                   " is reached through '" + (t.dir / "tree/dist").string() +
                                   "', a symbolic link to '" + fs::canonical(t.dir / "elsewhere").string() +
                                   "' out of the build tree");
  fs::remove(t.dir / "tree/dist");
  fs::create_directories(t.dir / "tree/dist");
  fs::copy_file(t.dir / "elsewhere/x-1.0-py3-none-any.whl", t.dir / "tree/dist/x-1.0-py3-none-any.whl");
  EXPECT_TRUE(compile::made_wheel(m.fs, t.dir / "tree", "dist/*.whl", t.dir / "command.log"));
}

TEST(ProbeLinks, ThePchScanReadsNoHeaderThroughALinkOut) {
  Tmp t("pch-link");
  auto m = probe::real_machine();
  fs::create_directories(t.dir / "tree/csrc");
  fs::create_directories(t.dir / "elsewhere");
  test_util::spit(t.dir / "elsewhere/config.h", "#define FROM_ELSEWHERE 1\n");
  fs::create_symlink(t.dir / "elsewhere/config.h", t.dir / "tree/csrc/config.h");
  test_util::spit(t.dir / "tree/csrc/a.cpp", "#include \"config.h\"\n#include <torch/extension.h>\n");
  const std::vector<fs::path> dirs = {t.dir / "tree/csrc"};
  // Without the tree named, the header is followed (its #define joins the prefix); with it, the
  // header stays as the file writes it and nothing of it is read.
  EXPECT_EQ(compile::pch::scan(m.fs, t.dir / "tree/csrc/a.cpp", dirs).prefix,
            std::vector<std::string>{"#define FROM_ELSEWHERE 1"});
  auto scanned = compile::pch::scan(m.fs, t.dir / "tree/csrc/a.cpp", dirs, t.dir / "tree");
  EXPECT_TRUE(scanned.reaches_header);
  EXPECT_EQ(scanned.prefix, std::vector<std::string>{"#include \"config.h\""});
}

TEST(ProbeLinks, PruningRemovesAnEntryWithoutFollowingItsLinks) {
  Tmp t("prune-link");
  auto m = probe::real_machine();
  const fs::path entry = t.dir / "cache/trees/0123456789abcdef";
  fs::create_directories(entry);
  fs::create_directories(t.dir / "elsewhere");
  test_util::spit(t.dir / "elsewhere/keep.txt", "keep\n");
  fs::create_symlink(t.dir / "elsewhere", entry / "pkg");
  auto report = cache::prune(
      m.fs, t.dir / "cache",
      cache::PruneOptions{.older_than = std::chrono::seconds(0), .max_bytes = {}, .now_ns = std::int64_t{1} << 62});
  ASSERT_TRUE(report) << report.error().render();
  EXPECT_FALSE(fs::exists(entry));
  EXPECT_EQ(test_util::slurp(t.dir / "elsewhere/keep.txt"), "keep\n");
}

}  // namespace
}  // namespace opforge
