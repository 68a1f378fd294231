#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "probe/fake_machine.h"
#include "util/strings.h"
#include "wheel/internal.h"
#include "wheel/wheel.h"
#include "wheel_test_util.h"

namespace opforge::wheel {
namespace {

std::string so_bytes() {
  static std::string so = testing::build_so("verify", "int opforge_v_abi_version(void) { return 1; }\n");
  return so;
}

Spec spec() {
  Spec s;
  s.name = "opforge-ops";
  s.version = "0.1.0";
  s.summary = "x";
  s.files = {{"opforge_ops/__init__.py", "", 0644}, {"opforge_ops/_lib/libopforge_v.so", so_bytes(), 0755}};
  return s;
}

bool mentions(const Report& r, const std::string& needle) {
  return std::any_of(r.problems.begin(), r.problems.end(),
                     [&](const std::string& p) { return p.find(needle) != std::string::npos; });
}

}  // namespace

TEST(WheelVerify, CleanWheelPasses) {
  auto p = pack(spec());
  ASSERT_TRUE(p) << p.error().message;
  auto r = verify_bytes(p->filename, p->bytes);
  EXPECT_TRUE(r.ok()) << strings::join(r.problems, "\n");
  EXPECT_EQ(r.files_checked, 4u);
}

TEST(WheelVerify, OneByteChangeInASharedLibraryIsNamed) {
  auto p = pack(spec());
  ASSERT_TRUE(p);
  // Re-zip the same entries with one byte of the .so flipped but the old RECORD kept.
  auto entries = read_archive(p->bytes);
  std::vector<File> files;
  for (auto& e : *entries) {
    if (e.path.ends_with(".so")) e.content[e.content.size() / 2] ^= 1;
    files.push_back({e.path, e.content, e.mode & 0777});
  }
  auto bytes = zip_entries(files, 315532800);
  ASSERT_TRUE(bytes);
  auto r = verify_bytes(p->filename, *bytes);
  ASSERT_EQ(r.problems.size(), 1u) << strings::join(r.problems, "\n");
  EXPECT_TRUE(r.problems[0].starts_with("opforge_ops/_lib/libopforge_v.so: sha256 differs from RECORD"))
      << r.problems[0];
}

TEST(WheelVerify, UnlistedMissingUnsafeAndMismatchedNames) {
  auto p = pack(spec());
  auto entries = read_archive(p->bytes);
  std::vector<File> files;
  for (auto& e : *entries) {
    if (e.path == "opforge_ops/__init__.py") continue;  // listed but missing
    files.push_back({e.path, e.content, e.mode & 0777});
  }
  files.push_back({"../evil", "x", 0644});  // unsafe and unlisted
  files.push_back({"/abs", "x", 0644});
  auto bytes = zip_entries(files, 315532800);
  ASSERT_TRUE(bytes);
  auto r = verify_bytes(p->filename, *bytes);
  EXPECT_TRUE(mentions(r, "opforge_ops/__init__.py: listed in RECORD but missing from the archive"));
  EXPECT_TRUE(mentions(r, "../evil: unsafe path (a '..' component)"));
  EXPECT_TRUE(mentions(r, "/abs: unsafe path (an absolute path)"));
  EXPECT_TRUE(mentions(r, "../evil: not listed in RECORD"));

  // Renamed file: version and tags disagree with the contents.
  auto renamed = verify_bytes("opforge_ops-0.2.0-py3-none-any.whl", p->bytes);
  EXPECT_TRUE(mentions(renamed,
                       "opforge_ops-0.1.0.dist-info: does not match the file name "
                       "(expected opforge_ops-0.2.0.dist-info)"));
  EXPECT_TRUE(mentions(renamed, "METADATA: Version '0.1.0' differs from the file name's '0.2.0'"));
  EXPECT_TRUE(mentions(renamed, "WHEEL: tags {py3-none-manylinux_2_"));
}

TEST(WheelVerify, SymlinkEntriesAreRejected) {
  auto p = pack(spec());
  auto entries = read_archive(p->bytes);
  // Rewrite one external attribute to S_IFLNK in the central directory.
  std::string z = p->bytes;
  auto pos = z.find(std::string("\x50\x4b\x01\x02", 4));
  ASSERT_NE(pos, std::string::npos);
  std::uint32_t attr = (0120777u) << 16;
  std::memcpy(z.data() + pos + 38, &attr, 4);
  auto r = verify_bytes(p->filename, z);
  EXPECT_TRUE(mentions(r, "opforge_ops/__init__.py: is a symlink"));
}

TEST(WheelNormalize, RetagsWithWhatItsFilesNeedAndKeepsTheFloor) {
  // A project's bdist_wheel says linux_x86_64 whatever its files need.
  auto dir = testing::temp_dir("retag");
  std::vector<File> files = {
      {"p-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: cp311-cp311-linux_x86_64\n", 0644},
      {"p/_lib.so",
       testing::build_so("retag",
                         "#include <string.h>\n__attribute__((visibility(\"default\"))) void "
                         "p_copy(char* d, const char* s, unsigned long n) { memcpy(d, s, n); }\n"),
       0755},
      {"p-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: p\nVersion: 1.0\n\n", 0644},
  };
  auto bytes = zip_entries(files, 1600000000);
  ASSERT_TRUE(bytes);
  testing::spit(dir / "p-1.0-cp311-cp311-linux_x86_64.whl", *bytes);
  auto m = probe::real_machine();
  NormalizeOptions opt;
  opt.retag = Spec::Retag::yes;
  auto w = normalize(m, dir / "p-1.0-cp311-cp311-linux_x86_64.whl", dir / "dist", opt);
  ASSERT_TRUE(w) << w.error().render();
  ASSERT_TRUE(w->packed.platform.platform.starts_with("manylinux_2_")) << w->packed.platform.platform;
  EXPECT_EQ(w->packed.filename, "p-1.0-cp311-cp311-" + w->packed.platform.platform + ".whl");
  EXPECT_EQ(w->packed.tags, std::vector<std::string>{"cp311-cp311-" + w->packed.platform.platform});
  // A floor older than what the library needs refuses it, and writes nothing.
  opt.glibc_floor = 12;  // memcpy@GLIBC_2.14
  auto refused = normalize(m, dir / "p-1.0-cp311-cp311-linux_x86_64.whl", dir / "dist5", opt);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::failed);
  EXPECT_TRUE(refused.error().message.starts_with("the wheel breaks its glibc floor 2.12 (manylinux_2_12)"))
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("p/_lib.so: GLIBC_2.14 (memcpy) of libc.so.6"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(std::filesystem::exists(dir / "dist5"));
  std::filesystem::remove_all(dir);
}

TEST(WheelNormalize, RepacksStripsAndRelabels) {
  // A wheel as setup.py would leave it: unsorted, odd modes, version without the local label.
  auto dir = testing::temp_dir("normalize");
  std::vector<File> files = {
      {"opforge_ops-0.1.0.dist-info/WHEEL",
       "Wheel-Version: 1.0\nGenerator: bdist_wheel (0.41)\nRoot-Is-Purelib: false\n"
       "Tag: py3-none-linux_x86_64\n",
       0644},
      {"opforge_ops/_lib/libopforge_v.so", so_bytes(), 0775},
      {"opforge_ops-0.1.0.dist-info/METADATA",
       "Metadata-Version: 2.1\nName: opforge-ops\nVersion: 0.1.0\nRequires-Dist: numpy\n\nbody\n", 0664},
      {"opforge_ops-0.1.0.dist-info/top_level.txt", "opforge_ops\n", 0644},
      {"opforge_ops/__init__.py", "", 0664},
      {"opforge_ops-0.1.0.dist-info/RECORD", "stale\n", 0644},
  };
  auto bytes = zip_entries(files, 1600000000);
  ASSERT_TRUE(bytes);
  testing::spit(dir / "opforge_ops-0.1.0-py3-none-linux_x86_64.whl", *bytes);

  auto m = probe::real_machine();
  NormalizeOptions opt;
  opt.version = "0.1.0+cu13.gabc1234";
  auto w = normalize(m, dir / "opforge_ops-0.1.0-py3-none-linux_x86_64.whl", dir / "dist", opt);
  ASSERT_TRUE(w) << w.error().render();
  EXPECT_EQ(w->packed.filename, "opforge_ops-0.1.0+cu13.gabc1234-py3-none-linux_x86_64.whl");
  auto r = verify(m.fs, w->path);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ok()) << strings::join(r->problems, "\n");
  auto out = read_archive(w->packed.bytes);
  std::vector<std::string> paths;
  for (const auto& e : *out) paths.push_back(e.path);
  const std::string di = "opforge_ops-0.1.0+cu13.gabc1234.dist-info/";
  EXPECT_EQ(paths, (std::vector<std::string>{"opforge_ops/__init__.py", "opforge_ops/_lib/libopforge_v.so",
                                             di + "METADATA", di + "WHEEL", di + "top_level.txt", di + "RECORD"}));
  EXPECT_EQ((*out)[2].content,
            "Metadata-Version: 2.1\nName: opforge-ops\nVersion: 0.1.0+cu13.gabc1234\n"
            "Requires-Dist: numpy\n\nbody\n");
  auto elf = read_elf((*out)[1].content);
  ASSERT_TRUE(elf);
  EXPECT_FALSE(elf->has_symtab);
  EXPECT_EQ((*out)[1].mode, 0100755u);
  EXPECT_EQ((*out)[0].mode, 0100644u);
  // Normalising twice gives the same bytes.
  auto again = normalize(m, dir / "opforge_ops-0.1.0-py3-none-linux_x86_64.whl", dir / "dist2", opt);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->packed.bytes, w->packed.bytes);
  std::filesystem::remove_all(dir);
}

TEST(WheelNormalize, StripRunsThroughTheProcessRunner) {
  probe::FakeMachine fake;
  std::vector<File> files = {{"p/x.so", so_bytes(), 0755},
                             {"p-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: p\nVersion: 1.0\n", 0644},
                             {"p-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: py3-none-linux_x86_64\n", 0644}};
  auto bytes = zip_entries(files, 315532800);
  fake.fs.add_file("/in/p-1.0-py3-none-linux_x86_64.whl", *bytes);
  fake.proc.on({"strip"}, probe::ProcessResult{0, 0, false, "", ""});
  auto w = normalize(fake.machine(), "/in/p-1.0-py3-none-linux_x86_64.whl", "/out", {});
  ASSERT_TRUE(w) << w.error().render();
  ASSERT_EQ(fake.proc.calls().size(), 1u);
  EXPECT_EQ(fake.proc.calls()[0].argv.at(0), "strip");
  EXPECT_EQ(fake.proc.calls()[0].argv.at(1), "--strip-unneeded");
  EXPECT_EQ(w->path, "/out/p-1.0-py3-none-linux_x86_64.whl");
}

// DeepSpeed's wheel as its setup.py writes it: an unpinned torch requirement and a version file of
// its own. The re-pack pins the torch it was built against (replacing any torch requirement,
// whatever its spelling), keeps the other requirements and the body, and rewrites the version file.
TEST(WheelNormalize, PinsTorchAndRewritesTheVersionFile) {
  probe::FakeMachine fake;
  std::vector<File> files = {
      {"deepspeed/git_version_info_installed.py", "version='0.19.8+abc'\n", 0644},
      {"deepspeed-0.19.8.dist-info/METADATA",
       "Metadata-Version: 2.1\nName: deepspeed\nVersion: 0.19.8\nRequires-Dist: hjson\n"
       "Requires-Dist: Torch>=1.9\nRequires-Dist: py-cpuinfo\n\nRequires-Dist: torch (in the body)\n",
       0644},
      {"deepspeed-0.19.8.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: cp311-cp311-linux_x86_64\n", 0644}};
  auto bytes = zip_entries(files, 315532800);
  ASSERT_TRUE(bytes);
  fake.fs.add_file("/in/deepspeed-0.19.8-cp311-cp311-linux_x86_64.whl", *bytes);
  NormalizeOptions opt;
  opt.version = "0.19.8+cu13";
  opt.requires_dist = {"torch==2.15.*"};
  std::vector<std::string> seen;
  opt.rewrite = [&seen](const std::string& path, const std::string& content) -> std::optional<std::string> {
    seen.push_back(path);
    if (path != "deepspeed/git_version_info_installed.py") return std::nullopt;
    EXPECT_EQ(content, "version='0.19.8+abc'\n");
    return std::string("version='0.19.8+cu13'\n");
  };
  auto w = normalize(fake.machine(), "/in/deepspeed-0.19.8-cp311-cp311-linux_x86_64.whl", "/out", opt);
  ASSERT_TRUE(w) << w.error().render();
  EXPECT_EQ(w->packed.filename, "deepspeed-0.19.8+cu13-cp311-cp311-linux_x86_64.whl");
  EXPECT_NE(std::find(seen.begin(), seen.end(), "deepspeed/git_version_info_installed.py"), seen.end());
  auto out = read_archive(w->packed.bytes);
  ASSERT_TRUE(out);
  std::map<std::string, std::string> by_path;
  for (const auto& e : *out) by_path[e.path] = e.content;
  EXPECT_EQ(by_path["deepspeed/git_version_info_installed.py"], "version='0.19.8+cu13'\n");
  EXPECT_EQ(by_path["deepspeed-0.19.8+cu13.dist-info/METADATA"],
            "Metadata-Version: 2.1\nName: deepspeed\nVersion: 0.19.8+cu13\nRequires-Dist: hjson\n"
            "Requires-Dist: py-cpuinfo\nRequires-Dist: torch==2.15.*\n\nRequires-Dist: torch (in the body)\n");
  auto r = verify_bytes(w->packed.filename, w->packed.bytes);
  EXPECT_TRUE(r.ok()) << strings::join(r.problems, "\n");
}

}  // namespace opforge::wheel
