#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "plan/jobs.h"
#include "probe/fake_machine.h"
#include "probe/json_cache.h"
#include "test_util.h"

namespace opforge::probe {
namespace {

TEST(ProbeRealProcess, CapturesOutputAndExitCode) {
  auto m = real_machine();
  auto r = m.proc.run(Command{.argv = {"sh", "-c", "echo out; echo err >&2; exit 3"}});
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
}

TEST(ProbeRealProcess, MissingProgramIsAnError) {
  auto m = real_machine();
  auto r = m.proc.run(Command{.argv = {"opforge-no-such-program"}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "cannot run 'opforge-no-such-program': not found on PATH");
}

TEST(ProbeRealProcess, TimeoutKills) {
  auto m = real_machine();
  const auto start = std::chrono::steady_clock::now();
  auto r = m.proc.run(Command{.argv = {"sleep", "5"}, .timeout = std::chrono::milliseconds(100)});
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->timed_out);
  // Killed at the timeout, not reaped when `sleep` ends by itself: far below its 5 s even on a
  // loaded machine.
  EXPECT_LT(took, std::chrono::seconds(3));
}

TEST(ProbeRealFileSystem, AtomicWriteLeavesNoTemporary) {
  auto m = real_machine();
  auto dir = m.fs.make_temp_directory("opforge-test-");
  ASSERT_TRUE(dir);
  ASSERT_TRUE(m.fs.write_file_atomic(*dir / "a.txt", "hello", 0644));
  EXPECT_EQ(*m.fs.read_file(*dir / "a.txt"), "hello");
  EXPECT_EQ(*m.fs.list_directory(*dir), std::vector<std::string>{"a.txt"});
  ASSERT_TRUE(m.fs.remove_all(*dir));
}

TEST(ProbeRealFileSystem, ReadsOnlyRegularFilesWithinTheirBound) {
  // The one way opforge reads a file: a FIFO (no writer: open would wait forever), /dev/zero
  // behind a link (never ends), a folder and a file over the bound are refused at once, by name.
  auto m = real_machine();
  auto dir = m.fs.make_temp_directory("opforge-test-");
  ASSERT_TRUE(dir);
  ASSERT_EQ(::mkfifo((*dir / "fifo").c_str(), 0644), 0);
  std::filesystem::create_symlink("/dev/zero", *dir / "zero");
  std::filesystem::create_directory(*dir / "folder");
  ASSERT_TRUE(m.fs.write_file_atomic(*dir / "ten", "0123456789", 0644));
  ASSERT_TRUE(m.fs.create_symlink("ten", *dir / "link"));
  auto message = [&](const std::string& name, std::uint64_t bound = FileSystem::kReadLimit) {
    auto r = m.fs.read_file(*dir / name, bound);
    EXPECT_FALSE(r) << name;
    EXPECT_EQ(r ? ErrorKind::failed : r.error().kind, ErrorKind::bad_input) << name;
    return r ? std::string() : r.error().message;
  };
  const std::string d = dir->string() + "/";
  EXPECT_EQ(message("fifo"), d + "fifo: is a FIFO, not a regular file");
  EXPECT_EQ(message("zero"), d + "zero: is a character device, not a regular file");
  EXPECT_EQ(message("folder"), d + "folder: is a directory, not a regular file");
  EXPECT_EQ(message("gone"), d + "gone: no such file");
  EXPECT_EQ(message("ten", 9), d + "ten: is 10 bytes, more than the limit of 9");
  EXPECT_EQ(*m.fs.read_file(*dir / "link", 10), "0123456789");  // a link to a regular file is read
  ASSERT_TRUE(m.fs.remove_all(*dir));
}

TEST(ProbeReadKeptFile, AnUnusableCacheFileIsSaidOnceAndIsAMiss) {
  FakeFileSystem fs;
  fs.add_special("/cache/compile-peaks.json");
  fs.add_file("/cache/big.json", std::string(100, 'x'));
  fs.add_file("/cache/ok.json", "{}");
  EXPECT_EQ(read_kept_file(fs, "/cache/missing.json"), std::nullopt);
  EXPECT_EQ(read_kept_file(fs, "/cache/ok.json"), "{}");
  EXPECT_EQ(read_kept_file(fs, "/cache/compile-peaks.json"), std::nullopt);
  EXPECT_EQ(read_kept_file(fs, "/cache/big.json", 10), std::nullopt);
  EXPECT_EQ(fs.notices(), (std::vector<std::string>{
                              "/cache/compile-peaks.json: is not a regular file: ignored and made again",
                              "/cache/big.json: is 100 bytes, more than the limit of 10: ignored and made again"}));
  // The job count's peaks: none, and a build's peaks replace the FIFO with a file.
  EXPECT_TRUE(plan::load_compile_peaks(fs, "/cache").empty());
  plan::store_compile_peaks(fs, "/cache", {{"op", 100}});
  EXPECT_EQ(fs.type_of("/cache/compile-peaks.json"), FileType::regular);
  EXPECT_EQ(plan::load_compile_peaks(fs, "/cache"), (std::map<std::string, std::uint64_t>{{"op", 100}}));
}

TEST(ProbeJsonCache, ADeepOrDamagedCacheIsSaidAndWrittenAfresh) {
  // 50,000 levels with a \udce9 escape (a form opforge writes) crashed the reader's walk.
  FakeFileSystem fs;
  std::string deep = "{\"k\": ";
  for (int i = 0; i < 50000; ++i) deep += "[";
  deep += "\"\\udce9\"";
  for (int i = 0; i < 50000; ++i) deep += "]";
  deep += "}";
  fs.add_file("/cache/probes.json", deep);
  JsonCache cache(fs, "/cache/probes.json");
  EXPECT_EQ(cache.find("k"), nullptr);
  ASSERT_EQ(fs.notices().size(), 1u);
  EXPECT_EQ(fs.notices()[0],
            "/cache/probes.json: not JSON opforge reads: arrays and objects nested more than 256 levels deep: "
            "ignored and made again");
  cache.store("k", {{"v", 1}});
  EXPECT_EQ(*fs.read_file("/cache/probes.json"), "{\n \"k\": {\n  \"v\": 1\n }\n}");
  fs.add_special("/cache/python.json");
  JsonCache fifo(fs, "/cache/python.json");
  EXPECT_EQ(fifo.find("k"), nullptr);
  EXPECT_EQ(fs.notices().back(), "/cache/python.json: is not a regular file: ignored and made again");
}

TEST(SourceGuards, NoRawFileReadsOutsideProbe) {
  // One bounded way to read a file, FileSystem::read_file: a raw read (a stream, fopen, open/read,
  // mmap, libzip opening a path) would block on a FIFO and read /dev/zero until memory ran out.
  // Only the probe implementation itself reads raw: the real file system, and the process runner
  // (its pipes, and /proc in a forked child that may not allocate).
  const std::regex raw(
      R"((std::(i|o)?fstream|\bifstream\b|\bfopen\s*\(|\bfread\s*\(|(^|[^A-Za-z0-9_>.])::(open|openat|read|pread)\s*\(|\bmmap\s*\(|\bzip_open\s*\())");
  for (const char* line :
       {"std::ifstream in(path);", "  ssize_t n = ::read(fd, buf, 9);", "FILE* f = fopen(p, \"r\");"})
    EXPECT_TRUE(std::regex_search(std::string(line), raw)) << line;
  for (const char* line : {"ElfImage::open(bytes)", "m.fs.read_file(p)", "zip_fopen_index(za, i, 0)"})
    EXPECT_FALSE(std::regex_search(std::string(line), raw)) << line;
  const std::set<std::string> allowed = {"probe/real_machine.cpp", "probe/real_process.cpp"};
  std::vector<std::string> readers;
  int scanned = 0;
  for (auto& [path, text] : test_util::core_sources()) {
    ++scanned;
    if (allowed.count(path)) continue;
    for (std::sregex_iterator it(text.begin(), text.end(), raw), end; it != end; ++it)
      readers.push_back(path + ": " + it->str());
  }
  EXPECT_GT(scanned, 100);
  EXPECT_EQ(readers, std::vector<std::string>{});
}

TEST(ProbeFakeFileSystem, FollowsSymlinks) {
  FakeFileSystem fs;
  fs.add_file("/usr/local/cuda-13.0/bin/nvcc", "#!", 0755);
  fs.add_symlink("/usr/local/cuda", "cuda-13.0");
  EXPECT_TRUE(fs.is_executable("/usr/local/cuda/bin/nvcc"));
  EXPECT_EQ(fs.type_of("/usr/local/cuda"), FileType::symlink);
  EXPECT_EQ(fs.resolved_type("/usr/local/cuda"), FileType::directory);
  EXPECT_EQ(*fs.canonical("/usr/local/cuda/bin"), "/usr/local/cuda-13.0/bin");
  EXPECT_EQ(*fs.list_directory("/usr/local"), (std::vector<std::string>{"cuda", "cuda-13.0"}));
}

TEST(ProbeFindOnPath, FirstMatchWins) {
  FakeFileSystem fs;
  fs.add_file("/a/gcc", "", 0644);  // not executable
  fs.add_file("/b/gcc", "", 0755);
  fs.add_file("/c/gcc", "", 0755);
  EXPECT_EQ(*find_on_path(fs, "gcc", "/a:/b:/c"), "/b/gcc");
  EXPECT_FALSE(find_on_path(fs, "clang", "/a:/b"));
}

}  // namespace
}  // namespace opforge::probe
