#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <ctime>

#include "util/strings.h"
#include "wheel/internal.h"
#include "wheel/wheel.h"
#include "wheel_test_util.h"

namespace opforge::wheel {
namespace {

Spec small_spec(const std::string& so) {
  Spec s;
  s.name = "opforge-ops";
  s.version = "0.1.0+cu13.gabc1234";
  s.summary = "Prebuilt ops";
  s.description = "# opforge-ops\n\nPrebuilt ops.\n";
  s.source_date_epoch = 1700000000;
  s.files = {{"opforge_ops/__init__.py", "X = 1\n", 0644},
             {"opforge_ops/_lib/libopforge_t.so", so, 0755},
             {"opforge_ops/build_info.py", "BUILD_INFO = {}\n", 0600}};
  return s;
}

std::string plain_so() {
  static std::string so = testing::build_so("plain", "int opforge_t_abi_version(void) { return 1; }\n");
  return so;
}

Result<Packed> pack_in_tz(const Spec& s, const char* tz) {
  const char* old = getenv("TZ");
  std::string saved = old ? old : "";
  setenv("TZ", tz, 1);
  tzset();
  auto p = pack(s);
  if (old) setenv("TZ", saved.c_str(), 1);
  else unsetenv("TZ");
  tzset();
  return p;
}

}  // namespace

TEST(WheelWriter, SameInputsSameBytesInAnyTimeZone) {
  ASSERT_FALSE(plain_so().empty()) << "gcc could not build the test library";
  auto s = small_spec(plain_so());
  auto a = pack_in_tz(s, "UTC");
  auto b = pack_in_tz(s, "America/Los_Angeles");
  auto c = pack_in_tz(s, "Asia/Kolkata");
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b && c);
  EXPECT_EQ(a->bytes, b->bytes);
  EXPECT_EQ(a->bytes, c->bytes);
  EXPECT_EQ(a->sha256.size(), 64u);
  // A DST-gap instant in Los Angeles (2023-03-12 02:30 local does not exist) changes nothing.
  s.source_date_epoch = 1678613400;
  auto d = pack_in_tz(s, "UTC");
  auto e = pack_in_tz(s, "America/Los_Angeles");
  ASSERT_TRUE(d && e);
  EXPECT_EQ(d->bytes, e->bytes);
  s.source_date_epoch = 1700000002;
  auto f = pack(s);
  EXPECT_NE(f->bytes, a->bytes);
}

TEST(WheelWriter, FileNameTagsAndOrder) {
  auto p = pack(small_spec(plain_so()));
  ASSERT_TRUE(p) << p.error().message;
  // A function that calls nothing needs no versioned glibc symbol: the oldest policy.
  std::string plat = "manylinux_2_5_x86_64";
  EXPECT_EQ(p->platform.platform, plat);
  EXPECT_EQ(p->filename, "opforge_ops-0.1.0+cu13.gabc1234-py3-none-" + plat + ".whl");
  auto entries = read_archive(p->bytes);
  ASSERT_TRUE(entries);
  std::vector<std::string> paths;
  for (const auto& e : *entries) paths.push_back(e.path);
  const std::string di = "opforge_ops-0.1.0+cu13.gabc1234.dist-info/";
  EXPECT_EQ(paths,
            (std::vector<std::string>{"opforge_ops/__init__.py", "opforge_ops/_lib/libopforge_t.so",
                                      "opforge_ops/build_info.py", di + "METADATA", di + "WHEEL", di + "RECORD"}));
  EXPECT_EQ((*entries)[0].mode, 0100644u);
  EXPECT_EQ((*entries)[1].mode, 0100755u);
  EXPECT_EQ((*entries)[2].mode, 0100644u);  // 0600 is written as 0644
  EXPECT_EQ((*entries)[4].content,
            "Wheel-Version: 1.0\nGenerator: opforge 0.1.0\n"
            "Root-Is-Purelib: false\nTag: py3-none-" +
                plat + "\n");
  EXPECT_TRUE((*entries)[3].content.starts_with(
      "Metadata-Version: 2.1\nName: opforge-ops\nVersion: 0.1.0+cu13.gabc1234\n"
      "Summary: Prebuilt ops\nRequires-Python: >=3.8\nDescription-Content-Type: text/markdown\n\n"
      "# opforge-ops\n"));
}

TEST(WheelWriter, StableAbiExtensionMakesTheTagCp3FloorAbi3) {
  auto s = small_spec(plain_so());
  s.files.push_back({"opforge_ops/_lib/_hooks.abi3.so", plain_so(), 0755});
  auto no_floor = pack(s);
  ASSERT_FALSE(no_floor);
  EXPECT_EQ(no_floor.error().kind, ErrorKind::bad_input);
  s.abi3_floor_minor = 8;
  auto p = pack(s);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->filename, "opforge_ops-0.1.0+cu13.gabc1234-cp38-abi3-manylinux_2_5_x86_64.whl");
  EXPECT_EQ(p->tags, std::vector<std::string>{"cp38-abi3-manylinux_2_5_x86_64"});
  auto report = verify_bytes(p->filename, p->bytes);
  EXPECT_TRUE(report.ok()) << strings::join(report.problems, "\n");
  auto in = inspect_bytes(p->filename, p->bytes);
  ASSERT_TRUE(in);
  EXPECT_EQ(in->abi.python_abi, "cp38-abi3");
  EXPECT_EQ(in->abi.reason,
            "opforge_ops/_lib/_hooks.abi3.so is a CPython extension built against the stable ABI (abi3, "
            "Py_LIMITED_API 3.8): CPython 3.8 and later; opforge_ops/_lib/_hooks.abi3.so: its file name says abi3, it "
            "uses no CPython symbol");
  EXPECT_TRUE(in->report.ok());
  // the same files tagged py3-none: inspect says the extension needs CPython
  s.tags = {"py3-none-manylinux_2_5_x86_64"};
  auto wrong = pack(s);
  ASSERT_TRUE(wrong);
  auto w = inspect_bytes(wrong->filename, wrong->bytes);
  ASSERT_TRUE(w);
  ASSERT_EQ(w->report.problems.size(), 1u);
  EXPECT_NE(w->report.problems[0].find("need CPython"), std::string::npos);
  // without one, the tag stays py3-none
  EXPECT_EQ(abi_tag({"opforge_ops/_lib/libopforge_t.so"}, 8, {}).python_abi, "py3-none");
}

TEST(WheelWriter, RecordRowsHashSizeAndOwnRow) {
  auto p = pack(small_spec(plain_so()));
  ASSERT_TRUE(p);
  auto entries = read_archive(p->bytes);
  const auto& record = entries->back().content;
  auto rows = strings::split(record, '\n');
  ASSERT_EQ(rows.size(), 7u);  // 6 rows + trailing empty
  // The hash as Python's hashlib + urlsafe_b64encode(...).rstrip('=') gives it.
  EXPECT_EQ(rows[0], "opforge_ops/__init__.py,sha256=Crrh4K5yghbuRJk8Wjp1X4scOH2Uf8TE9yyrDkqEIUs,6");
  EXPECT_EQ(rows[5], "opforge_ops-0.1.0+cu13.gabc1234.dist-info/RECORD,,");
  EXPECT_EQ(rows[0].find('='), rows[0].find("sha256=") + 6);
  EXPECT_EQ(record.find("=,"), std::string::npos);  // no base64 padding
}

TEST(WheelWriter, KnownBase64) {
  // RFC 4648 vectors, urlsafe alphabet, no padding.
  EXPECT_EQ(urlsafe_b64_nopad("f"), "Zg");
  EXPECT_EQ(urlsafe_b64_nopad("fo"), "Zm8");
  EXPECT_EQ(urlsafe_b64_nopad("foo"), "Zm9v");
  EXPECT_EQ(urlsafe_b64_nopad("\xfb\xff"), "-_8");
  // sha256("") as pip writes it.
  EXPECT_EQ(record_hash(""), "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
}

TEST(WheelWriter, NoExtraFieldsAndUtcDosTime) {
  auto p = pack(small_spec(plain_so()));
  ASSERT_TRUE(p);
  const std::string& z = p->bytes;
  // 1700000000 = 2023-11-14 22:13:20 UTC.
  auto [t, d] = dos_time_date(1700000000);
  EXPECT_EQ(t, (22 << 11) | (13 << 5) | 10);
  EXPECT_EQ(d, ((2023 - 1980) << 9) | (11 << 5) | 14);
  std::size_t count = 0;
  for (std::size_t i = 0; i + 46 <= z.size(); ++i) {
    std::uint32_t sig;
    std::memcpy(&sig, z.data() + i, 4);
    if (sig == 0x02014b50u) {
      std::uint16_t extra, time, date;
      std::memcpy(&time, z.data() + i + 12, 2);
      std::memcpy(&date, z.data() + i + 14, 2);
      std::memcpy(&extra, z.data() + i + 30, 2);
      EXPECT_EQ(extra, 0);
      EXPECT_EQ(time, t);
      EXPECT_EQ(date, d);
      ++count;
    } else if (sig == 0x04034b50u) {
      std::uint16_t extra;
      std::memcpy(&extra, z.data() + i + 28, 2);
      EXPECT_EQ(extra, 0);
    }
  }
  EXPECT_EQ(count, 6u);
  // Clamped to 1980-01-01.
  EXPECT_EQ(dos_time_date(0), dos_time_date(315532800));
  EXPECT_EQ(dos_time_date(0).second, (0 << 9) | (1 << 5) | 1);
}

TEST(WheelWriter, RejectsUnsafePathsAndBadVersions) {
  auto s = small_spec(plain_so());
  s.files.push_back({"../x", "x", 0644});
  auto e = pack(s);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().message, "wheel file '../x' is a '..' component");
  s.files.back().path = "/etc/passwd";
  e = pack(s);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().message, "wheel file '/etc/passwd' is an absolute path");
  s.files.pop_back();
  s.version = "0.1.0+Cu13";
  e = pack(s);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().kind, ErrorKind::bad_input);
}

TEST(WheelWriter, WriteIsAtomicIntoDist) {
  auto dir = testing::temp_dir("write");
  auto m = probe::real_machine();
  auto w = write(m.fs, small_spec(plain_so()), dir / "dist");
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->path.parent_path(), dir / "dist");
  EXPECT_EQ(testing::slurp(w->path), w->packed.bytes);
  std::size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir / "dist")) (void)e, ++files;
  EXPECT_EQ(files, 1u);  // no temp file left behind
  auto r = verify(m.fs, w->path);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ok()) << strings::join(r->problems, "\n");
  EXPECT_EQ(r->files_checked, 5u);
  std::filesystem::remove_all(dir);
}

}  // namespace opforge::wheel
