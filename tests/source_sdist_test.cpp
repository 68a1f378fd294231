// [source] sdist: hostile archives made here with libarchive's writer are refused before anything is
// written; a good one unpacks with normalised modes; the download goes through python3 (faked); the
// recipe keys; and a plan of the unpacked tree.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>

#include "plan/plan.h"
#include "probe/fake_machine.h"
#include "recipe/recipe.h"
#include "source/archive.h"
#include "source/sdist.h"
#include "test_util.h"
#include "util/hash.h"

namespace opforge::source {
namespace {

/// One member of an archive a test makes: a file unless `type` says otherwise.
struct TarMember {
  std::string name;
  std::string content{};
  unsigned type = AE_IFREG;
  unsigned perm = 0644;
  std::string symlink{};   ///< with AE_IFLNK
  std::string hardlink{};  ///< a hard link to this member name
};

TarMember tar_dir(std::string name) { return {.name = std::move(name), .type = AE_IFDIR, .perm = 0755}; }
TarMember tar_symlink(std::string name, std::string target) {
  return {.name = std::move(name), .type = AE_IFLNK, .perm = 0777, .symlink = std::move(target)};
}
TarMember tar_hardlink(std::string name, std::string target) {
  return {.name = std::move(name), .hardlink = std::move(target)};
}

/// A pax tar, gzip-compressed unless told otherwise: libarchive's writer stores any name it is given.
std::string make_tar(const std::vector<TarMember>& members, bool gzip = true) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (gzip) archive_write_add_filter_gzip(a);
  std::string buf(32u << 20, '\0');
  size_t used = 0;
  EXPECT_EQ(archive_write_open_memory(a, buf.data(), buf.size(), &used), ARCHIVE_OK);
  for (const auto& m : members) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.name.c_str());
    archive_entry_set_filetype(e, m.type);
    archive_entry_set_perm(e, m.perm);
    archive_entry_set_mtime(e, 1700000000, 0);
    if (m.type == AE_IFLNK) archive_entry_set_symlink(e, m.symlink.c_str());
    if (!m.hardlink.empty()) archive_entry_set_hardlink(e, m.hardlink.c_str());
    if (m.type == AE_IFCHR || m.type == AE_IFBLK) archive_entry_set_rdev(e, makedev(1, 3));
    archive_entry_set_size(e, m.type == AE_IFREG && m.hardlink.empty() ? static_cast<la_int64_t>(m.content.size()) : 0);
    EXPECT_EQ(archive_write_header(a, e), ARCHIVE_OK) << m.name << ": " << archive_error_string(a);
    if (!m.content.empty()) archive_write_data(a, m.content.data(), m.content.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  buf.resize(used);
  return buf;
}

/// An sdist-shaped archive: demo-1.0/ with setup.py, a package, an executable, links.
std::vector<TarMember> good_members() {
  return {tar_dir("demo-1.0/"),
          {.name = "demo-1.0/setup.py", .content = "from setuptools import setup\nsetup()\n", .perm = 0664},
          {.name = "demo-1.0/run.sh", .content = "#!/bin/sh\n", .perm = 04775},  // setuid: dropped
          {.name = "demo-1.0/pkg/__init__.py", .content = "x = 1\n", .perm = 0600},
          tar_symlink("demo-1.0/pkg/alias.py", "__init__.py"),
          tar_symlink("demo-1.0/docs", "pkg"),
          tar_hardlink("demo-1.0/pkg/copy.py", "demo-1.0/setup.py")};
}

const char* const kHintStart = "opforge unpacks only archives whose members stay inside their folder";

struct Hostile {
  const char* what;
  std::vector<TarMember> members;
  std::string message;
};

std::vector<Hostile> hostile_archives() {
  const std::string at = "demo.tar.gz: member ";
  return {
      {"dotdot",
       {tar_dir("demo-1.0/"), {.name = "../evil", .content = "x"}},
       at + "\"../evil\": its name has a \"..\" component"},
      {"dotdot inside",
       {{.name = "demo-1.0/a/../../evil", .content = "x"}},
       at + "\"demo-1.0/a/../../evil\": its name has a \"..\" component"},
      {"absolute",
       {{.name = "/etc/cron.d/evil", .content = "x"}},
       at + "\"/etc/cron.d/evil\": its name is an absolute path"},
      {"symlink absolute",
       {tar_dir("demo-1.0/"), tar_symlink("demo-1.0/l", "/etc/passwd")},
       at + "\"demo-1.0/l\": a symbolic link to the absolute path \"/etc/passwd\""},
      {"symlink outside",
       {tar_dir("demo-1.0/"), tar_symlink("demo-1.0/sub/l", "../../../etc")},
       at + "\"demo-1.0/sub/l\": a symbolic link to \"../../../etc\", which leads outside the archive's folder"},
      // Lexically "demo-1.0/l/.." is demo-1.0, but l is a link to the top: ".." after it leaves.
      {"symlink through symlink",
       {tar_dir("demo-1.0/"), tar_symlink("demo-1.0/l", ".."), tar_symlink("demo-1.0/x", "l/..")},
       at + "\"demo-1.0/x\": a symbolic link to \"l/..\", which leads outside the archive's folder"},
      {"symlink loop",
       {tar_dir("demo-1.0/"), tar_symlink("demo-1.0/a", "b"), tar_symlink("demo-1.0/b", "a")},
       at + "\"demo-1.0/a\": a symbolic link in a loop of symbolic links"},
      {"hard link absolute",
       {tar_dir("demo-1.0/"), tar_hardlink("demo-1.0/h", "/etc/shadow")},
       at + "\"demo-1.0/h\": the file its hard link names is an absolute path"},
      {"hard link outside",
       {tar_dir("demo-1.0/"), tar_hardlink("demo-1.0/h", "../x")},
       at + "\"demo-1.0/h\": the file its hard link names has a \"..\" component"},
      {"hard link to nothing",
       {tar_dir("demo-1.0/"), tar_hardlink("demo-1.0/h", "demo-1.0/later"), {.name = "demo-1.0/later"}},
       at + "\"demo-1.0/h\": a hard link to \"demo-1.0/later\", which is not a file earlier in the archive"},
      {"through a symlink",
       {tar_dir("demo-1.0/sub/"), tar_symlink("demo-1.0/l", "sub"), {.name = "demo-1.0/l/x", .content = "x"}},
       at + "\"demo-1.0/l/x\": it is under \"demo-1.0/l\", which an earlier member made a symbolic link: it would be "
            "written through the link"},
      {"character device",
       {tar_dir("demo-1.0/"), {.name = "demo-1.0/null", .type = AE_IFCHR}},
       at + "\"demo-1.0/null\": a character device: device files, FIFOs and sockets are not unpacked"},
      {"block device",
       {tar_dir("demo-1.0/"), {.name = "demo-1.0/sda", .type = AE_IFBLK}},
       at + "\"demo-1.0/sda\": a block device: device files, FIFOs and sockets are not unpacked"},
      {"fifo",
       {tar_dir("demo-1.0/"), {.name = "demo-1.0/pipe", .type = AE_IFIFO}},
       at + "\"demo-1.0/pipe\": a FIFO: device files, FIFOs and sockets are not unpacked"},
      {"same name twice",
       {{.name = "demo-1.0/a", .content = "1"}, {.name = "demo-1.0/./a", .content = "2"}},
       at + "\"demo-1.0/./a\": a second member of the same name"},
      {"file then folder",
       {{.name = "demo-1.0/a", .content = "1"}, {.name = "demo-1.0/a/b", .content = "2"}},
       at + "\"demo-1.0/a/b\": it is under \"demo-1.0/a\", which an earlier member made a file"},
      {"folder then file",
       {{.name = "demo-1.0/a/b", .content = "2"}, {.name = "demo-1.0/a", .content = "1"}},
       at + "\"demo-1.0/a\": a file with the name of a folder that other members are in"},
      {"folder then link",
       {{.name = "demo-1.0/a/b", .content = "2"}, tar_symlink("demo-1.0/a", "b")},
       at + "\"demo-1.0/a\": a symbolic link with the name of a folder that other members are in"},
      {"two tops",
       {{.name = "a/x"}, {.name = "b/y"}},
       "demo.tar.gz: holds 2 entries at its top (a, b), not one folder"},
      {"a file at the top",
       {{.name = "setup.py", .content = "x"}},
       "demo.tar.gz: holds a file at its top (\"setup.py\"), not one folder"},
      {"empty", {tar_dir("./")}, "demo.tar.gz: holds no members"},
  };
}

TEST(SourceArchive, HostileArchivesAreRefusedBeforeAnythingIsWritten) {
  for (const auto& h : hostile_archives()) {
    SCOPED_TRACE(h.what);
    probe::FakeFileSystem fs;
    auto top = unpack(fs, make_tar(h.members), "demo.tar.gz", "/cache/sdists/x/tree.tmp");
    ASSERT_FALSE(top);
    EXPECT_EQ(top.error().kind, ErrorKind::bad_input);
    EXPECT_EQ(top.error().message, h.message);
    EXPECT_EQ(fs.log(), std::vector<std::string>{});
    EXPECT_EQ(fs.type_of("/cache/sdists/x/tree.tmp"), probe::FileType::none);
  }
}

TEST(SourceArchive, RefusalsSayWhyAndWhatToDo) {
  auto top = check_archive(make_tar({{.name = "../evil"}}), "demo.tar.gz");
  ASSERT_FALSE(top);
  EXPECT_TRUE(top.error().hint.starts_with(kHintStart)) << top.error().hint;
  auto two = top_folder({{.path = "a/x"}, {.path = "b"}}, "demo.tar.gz");
  ASSERT_FALSE(two);
  EXPECT_EQ(two.error().hint,
            "an sdist ({name}-{version}.tar.gz, PEP 625) holds one folder, {name}-{version}/, with the project in it");
}

TEST(SourceArchive, BoundsAreChecked) {
  ArchiveLimits few;
  few.members = 3;
  auto many =
      check_archive(make_tar({{.name = "d/1"}, {.name = "d/2"}, {.name = "d/3"}, {.name = "d/4"}}), "demo.tar.gz", few);
  ASSERT_FALSE(many);
  EXPECT_EQ(many.error().message, "demo.tar.gz: holds more than 3 members (the limit)");

  ArchiveLimits small;
  small.member_bytes = 10;
  small.total_bytes = 15;
  auto big = check_archive(make_tar({{.name = "d/big", .content = std::string(11, 'x')}}), "demo.tar.gz", small);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().message, "demo.tar.gz: member \"d/big\": 11 bytes, more than the limit of 10 for one member");
  auto sum = check_archive(
      make_tar({{.name = "d/a", .content = std::string(10, 'x')}, {.name = "d/b", .content = std::string(10, 'x')}}),
      "demo.tar.gz", small);
  ASSERT_FALSE(sum);
  EXPECT_EQ(sum.error().message, "demo.tar.gz: its members add up to more than 15 bytes (the limit)");

  ArchiveLimits ratio;
  ratio.ratio_floor = 0;
  ratio.ratio = 50;
  const std::string bomb = make_tar({{.name = "d/zeros", .content = std::string(1 << 20, '\0')}});
  auto zeros = check_archive(bomb, "demo.tar.gz", ratio);
  ASSERT_FALSE(zeros);
  EXPECT_EQ(zeros.error().message, "demo.tar.gz: " + std::to_string(bomb.size()) +
                                       " bytes that expand to 1048576, more than 50 times as much: a compression "
                                       "bomb, not a source archive");

  ArchiveLimits tiny;
  tiny.archive_bytes = 100;
  auto large = check_archive(bomb, "demo.tar.gz", tiny);
  ASSERT_FALSE(large);
  EXPECT_EQ(large.error().message,
            "demo.tar.gz: " + std::to_string(bomb.size()) + " bytes, more than the limit of 100 for a source archive");
}

TEST(SourceArchive, NotATarArchive) {
  auto top = check_archive("PK\x03\x04 this is a zip file, not a tar", "demo.zip");
  ASSERT_FALSE(top);
  EXPECT_EQ(top.error().message,
            "demo.zip: not a tar archive opforge can read (libarchive: Unrecognized archive format)");
}

TEST(SourceArchive, AGoodSdistUnpacksWithNormalisedModesAndLinksLast) {
  probe::FakeFileSystem fs;
  auto top = unpack(fs, make_tar(good_members()), "demo-1.0.tar.gz", "/t");
  ASSERT_TRUE(top) << top.error().render();
  EXPECT_EQ(*top, "demo-1.0");
  const auto& n = fs.nodes();
  EXPECT_EQ(n.at("/t/demo-1.0/setup.py").mode, 0644u);
  EXPECT_EQ(n.at("/t/demo-1.0/setup.py").content, "from setuptools import setup\nsetup()\n");
  EXPECT_EQ(n.at("/t/demo-1.0/run.sh").mode, 0755u);
  EXPECT_EQ(n.at("/t/demo-1.0/pkg/__init__.py").mode, 0644u);
  EXPECT_EQ(n.at("/t/demo-1.0/pkg/copy.py").type, probe::FileType::regular);
  EXPECT_EQ(n.at("/t/demo-1.0/pkg/copy.py").content, n.at("/t/demo-1.0/setup.py").content);
  EXPECT_EQ(n.at("/t/demo-1.0/pkg/alias.py").type, probe::FileType::symlink);
  EXPECT_EQ(n.at("/t/demo-1.0/pkg/alias.py").content, "__init__.py");
  EXPECT_EQ(n.at("/t/demo-1.0/docs").content, "pkg");
  // The links come after every file, so no write can pass through one.
  ASSERT_GE(fs.log().size(), 2u);
  EXPECT_EQ(fs.log()[fs.log().size() - 2], "symlink /t/demo-1.0/pkg/alias.py -> __init__.py");
  EXPECT_EQ(fs.log().back(), "symlink /t/demo-1.0/docs -> pkg");
}

TEST(SourceArchive, DotSlashNamesAndOtherCompressionsAreRead) {
  probe::FakeFileSystem fs;
  auto top =
      unpack(fs, make_tar({tar_dir("./"), tar_dir("./demo-1.0/"), {.name = "./demo-1.0/a.py", .content = "a"}}, false),
             "demo-1.0.tar", "/t");
  ASSERT_TRUE(top) << top.error().render();
  EXPECT_EQ(*top, "demo-1.0");
  EXPECT_EQ(fs.nodes().at("/t/demo-1.0/a.py").content, "a");
}

TEST(SourceArchive, RealDiskModes) {
  const auto dir = test_util::temp_dir("sdist-modes");
  auto& files = probe::real_machine().fs;
  auto top = unpack(files, make_tar(good_members()), "demo-1.0.tar.gz", dir / "t");
  ASSERT_TRUE(top) << top.error().render();
  namespace sfs = std::filesystem;
  auto perms = [](const sfs::path& p) { return static_cast<unsigned>(sfs::symlink_status(p).permissions()); };
  EXPECT_EQ(perms(dir / "t/demo-1.0/setup.py"), 0644u);
  EXPECT_EQ(perms(dir / "t/demo-1.0/run.sh"), 0755u);  // setuid dropped
  EXPECT_EQ(perms(dir / "t/demo-1.0/pkg/__init__.py"), 0644u);
  EXPECT_TRUE(sfs::is_symlink(dir / "t/demo-1.0/pkg/alias.py"));
  EXPECT_EQ(test_util::slurp(dir / "t/demo-1.0/docs/alias.py"), "x = 1\n");
  sfs::remove_all(dir);
}

// --- fetch_sdist ---------------------------------------------------------------------------------

const std::string kUrl = "https://files.example.org/packages/demo-1.0.tar.gz";

TEST(SourceSdist, ALocalArchiveIsUnpackedOnceIntoTheCache) {
  probe::FakeMachine fm;
  const std::string tar = make_tar(good_members());
  const std::string sha = sha256_hex(tar);
  fm.fs.add_file("/src/demo-1.0.tar.gz", tar);
  auto got = fetch_sdist(fm.machine(), "/src/demo-1.0.tar.gz", std::nullopt, "/cache/sdists");
  ASSERT_TRUE(got) << got.error().render();
  const fs::path entry = "/cache/sdists/demo-1.0-" + sha.substr(0, 16);
  EXPECT_EQ(got->entry, entry);
  EXPECT_EQ(got->root, entry / "tree/demo-1.0");
  EXPECT_EQ(got->sha256, sha);
  EXPECT_FALSE(got->reused);
  EXPECT_EQ(fm.fs.nodes().at((entry / "tree/demo-1.0/run.sh").string()).mode, 0755u);
  EXPECT_TRUE(fm.proc.calls().empty());
  // The temporary folder was renamed into place.
  EXPECT_EQ(*fm.fs.list_directory(entry), (std::vector<std::string>{"tree"}));

  auto again = fetch_sdist(fm.machine(), "/src/demo-1.0.tar.gz", sha, "/cache/sdists");
  ASSERT_TRUE(again) << again.error().render();
  EXPECT_TRUE(again->reused);
  EXPECT_EQ(again->root, got->root);
}

TEST(SourceSdist, ALocalArchiveWhoseSha256DiffersIsRefused) {
  probe::FakeMachine fm;
  const std::string tar = make_tar(good_members());
  fm.fs.add_file("/src/demo-1.0.tar.gz", tar);
  const std::string pinned(64, 'a');
  auto got = fetch_sdist(fm.machine(), "/src/demo-1.0.tar.gz", pinned, "/cache/sdists");
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(got.error().message,
            "/src/demo-1.0.tar.gz: sha256 is " + sha256_hex(tar) + ", but [source] sha256 is " + pinned);
  EXPECT_EQ(fm.fs.log(), std::vector<std::string>{});
}

TEST(SourceSdist, AUrlIsDownloadedByPythonCheckedAndRenamed) {
  probe::FakeMachine fm;
  const std::string tar = make_tar(good_members());
  const std::string sha = sha256_hex(tar);
  const fs::path entry = "/cache/sdists/demo-1.0-" + sha.substr(0, 16);
  const fs::path part = entry / ("demo-1.0.tar.gz.part-" + std::to_string(::getpid()));
  fm.fs.add_file(part, tar);  // what python3 writes
  fm.proc.on({"python3"}, probe::ProcessResult{.exit_code = 0});
  auto got = fetch_sdist(fm.machine(), kUrl, sha, "/cache/sdists");
  ASSERT_TRUE(got) << got.error().render();
  ASSERT_EQ(fm.proc.calls().size(), 1u);
  EXPECT_EQ(fm.proc.calls()[0].argv,
            (std::vector<std::string>{"python3", "-I", "-c", kFetchScript, kUrl, part.string(), "1073741824"}));
  EXPECT_EQ(fm.proc.calls()[0].cwd, entry);
  EXPECT_TRUE(got->downloaded);
  EXPECT_EQ(got->root, entry / "tree/demo-1.0");
  EXPECT_EQ(fm.fs.nodes().at((entry / "demo-1.0.tar.gz").string()).content, tar);
  EXPECT_EQ(fm.fs.type_of(part), probe::FileType::none);
  EXPECT_TRUE(in_cache(fm.fs, kUrl, entry));
}

TEST(SourceSdist, ADownloadWhoseSha256DiffersIsRemoved) {
  probe::FakeMachine fm;
  const std::string pinned = sha256_hex("the archive the recipe pins");
  const fs::path entry = "/cache/sdists/demo-1.0-" + pinned.substr(0, 16);
  const fs::path part = entry / ("demo-1.0.tar.gz.part-" + std::to_string(::getpid()));
  const std::string evil = make_tar({{.name = "demo-1.0/setup.py", .content = "import os; os.system('evil')"}});
  fm.fs.add_file(part, evil);
  fm.proc.on({"python3"}, probe::ProcessResult{.exit_code = 0});
  auto got = fetch_sdist(fm.machine(), kUrl, pinned, "/cache/sdists");
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(got.error().message, kUrl + ": sha256 is " + sha256_hex(evil) + ", but [source] sha256 is " + pinned +
                                     " (the download is removed)");
  EXPECT_EQ(fm.fs.type_of(part), probe::FileType::none);
  EXPECT_EQ(fm.fs.type_of(entry / "demo-1.0.tar.gz"), probe::FileType::none);
  EXPECT_FALSE(in_cache(fm.fs, kUrl, entry));
}

TEST(SourceSdist, AHostileDownloadLeavesNothing) {
  probe::FakeMachine fm;
  const std::string evil = make_tar({tar_dir("demo-1.0/"), tar_symlink("demo-1.0/l", "/home")});
  const std::string sha = sha256_hex(evil);
  const fs::path entry = "/cache/sdists/demo-1.0-" + sha.substr(0, 16);
  fm.fs.add_file(entry / ("demo-1.0.tar.gz.part-" + std::to_string(::getpid())), evil);
  fm.proc.on({"python3"}, probe::ProcessResult{.exit_code = 0});
  auto got = fetch_sdist(fm.machine(), kUrl, sha, "/cache/sdists");
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().message, kUrl + ": member \"demo-1.0/l\": a symbolic link to the absolute path \"/home\"");
  EXPECT_EQ(fm.fs.type_of(entry), probe::FileType::none);
}

TEST(SourceSdist, ADownloadThatFailsSaysPythonsLastLine) {
  probe::FakeMachine fm;
  fm.proc.on(
      {"python3"},
      probe::ProcessResult{.exit_code = 1, .err = "URLError: <urlopen error [Errno -2] Name or service not known>\n"});
  auto got = fetch_sdist(fm.machine(), kUrl, std::string(64, 'b'), "/cache/sdists");
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, ErrorKind::unsatisfied);
  EXPECT_EQ(got.error().message,
            "cannot download " + kUrl + ": URLError: <urlopen error [Errno -2] Name or service not known>");
}

TEST(SourceSdist, AUrlNeedsASha256) {
  probe::FakeMachine fm;
  auto got = fetch_sdist(fm.machine(), kUrl, std::nullopt, "/cache/sdists");
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().message, "[source] sdist = \"" + kUrl + "\" is a URL without sha256");
  EXPECT_TRUE(fm.proc.calls().empty());
}

TEST(SourceSdist, KeysNameTheArchiveAndItsDigest) {
  const std::string sha = "0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789abcdef";
  EXPECT_EQ(sdist_key(kUrl + "?download=1#frag", sha), "demo-1.0-0123456789abcdef");
  EXPECT_EQ(sdist_key("/x/flash attn-2.8.tgz", sha), "flash_attn-2.8-0123456789abcdef");
  EXPECT_EQ(sdist_key("/x/.tar.gz", sha), "sdist.tar.gz-0123456789abcdef");
  EXPECT_TRUE(is_sha256(sha));
  EXPECT_FALSE(is_sha256(sha.substr(1)));
  EXPECT_FALSE(is_sha256(std::string(63, 'a') + "g"));
  EXPECT_TRUE(is_url("https://x/y.tar.gz"));
  EXPECT_FALSE(is_url("file:///x/y.tar.gz"));
}

}  // namespace
}  // namespace opforge::source

// --- the recipe keys -----------------------------------------------------------------------------

namespace opforge::recipe {
namespace {

TEST(RecipeSdist, KeysParse) {
  const std::string sha(64, 'A');
  auto r = parse_file("/x/recipes/r.toml", "[source]\nsdist = \"../dl/demo-1.0.tar.gz\"\nsha256 = \"" + sha + "\"\n");
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(*r->source.sdist, "/x/dl/demo-1.0.tar.gz");
  EXPECT_EQ(*r->source.sha256, std::string(64, 'a'));
  EXPECT_FALSE(r->source.path);
  auto url = parse_file("/x/r.toml", "[source]\nsdist = \"https://e.org/demo-1.0.tar.gz\"\nsha256 = \"" + sha + "\"\n");
  ASSERT_TRUE(url) << url.error().render();
  EXPECT_EQ(*url->source.sdist, "https://e.org/demo-1.0.tar.gz");
}

TEST(RecipeSdist, ErrorsPointAtTheKey) {
  struct Case {
    std::string body, rendered;
  };
  const std::vector<Case> cases = {
      {"[source]\npath = \".\"\nsdist = \"d.tar.gz\"\n",
       "r.toml:3:9: [source] has both path and sdist\n  sdist = \"d.tar.gz\"\n          ^"},
      {"[source]\ngit = \"https://e.org/x.git\"\nsdist = \"d.tar.gz\"\n",
       "r.toml:3:9: [source] has both git and sdist\n  sdist = \"d.tar.gz\"\n          ^"},
      {"[source]\nsdist = \"d.tar.gz\"\nsha256 = \"abc\"\n",
       "r.toml:3:10: source.sha256 \"abc\" is not 64 hex digits\n  sha256 = \"abc\"\n           ^"},
      {"[source]\nsdist = \"https://e.org/d.tar.gz\"\n",
       "r.toml:2:9: source.sdist is a URL without sha256\n  sdist = \"https://e.org/d.tar.gz\"\n          ^"},
      {"[source]\nsdist = \"ftp://e.org/d.tar.gz\"\n",
       "r.toml:2:9: source.sdist: \"ftp://e.org/d.tar.gz\" is not an http(s) URL\n  sdist = \"ftp://e.org/d.tar.gz\"\n"
       "          ^"},
      {"[source]\nsha256 = \"" + std::string(64, 'a') + "\"\n",
       "r.toml:2:10: source.sha256 needs source.sdist\n  sha256 = \"" + std::string(64, 'a') + "\"\n           ^"},
  };
  for (const auto& c : cases) {
    auto r = parse_file("r.toml", c.body);
    ASSERT_FALSE(r) << c.body;
    EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
    EXPECT_EQ(r.error().render().substr(0, c.rendered.size()), c.rendered) << r.error().render();
  }
}

}  // namespace
}  // namespace opforge::recipe

// --- a plan of the unpacked tree ----------------------------------------------------------------

namespace opforge::plan {
namespace {

TEST(PlanSdist, ACommandBuildPlansTheUnpackedTree) {
  probe::FakeMachine fm;
  fm.env.set("PATH", "/usr/bin");
  fm.env.set("OPFORGE_CACHE_DIR", "/cache");
  const std::string tar = source::make_tar(source::good_members());
  fm.fs.add_file("/r/dl/demo-1.0.tar.gz", tar);
  fm.fs.add_file("/r/recipe.toml",
                 "[package]\nname = \"demo\"\nversion = \"1.0\"\n[source]\nsdist = "
                 "\"dl/demo-1.0.tar.gz\"\nsha256 = \"" +
                     sha256_hex(tar) +
                     "\"\n[arch]\nlist = \"none\"\n[build]\nbackend = \"command\"\n"
                     "command = [\"python3\", \"setup.py\", \"bdist_wheel\"]\n");
  Options opts;
  opts.resolvers.cuda = [](probe::Machine, const std::string&, const std::string&) -> Result<cuda::Resolution> {
    return unsatisfied("no CUDA toolkit found");
  };
  auto p = plan::make(fm.machine(), "/r/recipe.toml", opts);
  ASSERT_TRUE(p) << p.error().render();
  const fs::path root = "/cache/sdists/demo-1.0-" + sha256_hex(tar).substr(0, 16) + "/tree/demo-1.0";
  EXPECT_EQ(p->source.root, root);
  EXPECT_EQ(p->source.commit, "");
  EXPECT_EQ(p->source.catalogue, Catalogue::none);
  EXPECT_EQ(fm.fs.nodes().at((root / "setup.py").string()).content, "from setuptools import setup\nsetup()\n");
}

TEST(PlanSdist, PlanDoesNotDownload) {
  probe::FakeMachine fm;
  fm.env.set("OPFORGE_CACHE_DIR", "/cache");
  const std::string sha(64, 'c');
  fm.fs.add_file("/r/recipe.toml", "[source]\nsdist = \"https://e.org/demo-1.0.tar.gz\"\nsha256 = \"" + sha + "\"\n");
  auto r = recipe::parse_file("/r/recipe.toml", *fm.fs.read_file("/r/recipe.toml"));
  ASSERT_TRUE(r) << r.error().render();
  auto s = inspect_source(fm.machine(), *r, {}, false);
  ASSERT_TRUE(s) << s.error().render();
  EXPECT_EQ(s->not_fetched, "https://e.org/demo-1.0.tar.gz (sha256 " + sha + ", into /cache/sdists/demo-1.0-" +
                                sha.substr(0, 16) + ")");
  EXPECT_TRUE(s->root.empty());
  EXPECT_TRUE(fm.proc.calls().empty());
}

}  // namespace
}  // namespace opforge::plan
