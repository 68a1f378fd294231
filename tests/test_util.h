#pragma once
// Helpers shared by the C++ tests: whole-file reads and writes, a per-process temp folder, the
// captured outputs under tests/data, and the skip that CI turns into a failure.
#include <unistd.h>

#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace opforge::test_util {

inline std::filesystem::path temp_dir(const std::string& tag) {
  auto dir = std::filesystem::temp_directory_path() / ("opforge-test-" + tag + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void spit(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

#ifdef OPFORGE_TEST_FIXTURES
/// The [source] table of a recipe that builds tests/fixtures' ops (three lines: a test's own
/// recipe lines after it count from line 4).
inline std::string fixture_source() {
  return std::string("[source]\npath = \"") + OPFORGE_TEST_FIXTURES + "\"\nops_dir = \"ops\"\n";
}
#endif

/// A file of tests/data (captured real outputs), e.g. data("nvcc/13.0-version.txt").
inline std::string data(const std::string& rel) { return slurp(std::filesystem::path(OPFORGE_TEST_DATA) / rel); }

/// True in CI (CI=true), where every tool scripts/deps installs must be there.
inline bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

/// Every `.cpp`/`.h` of the core under src/ (not the shipped kernels, libraries of their own), as
/// {path relative to src/, text}: what the source guards (settings readers, file readers, layering) scan.
inline std::vector<std::pair<std::string, std::string>> core_sources() {
  std::vector<std::pair<std::string, std::string>> out;
  const std::filesystem::path src = std::filesystem::path(OPFORGE_SOURCE_DIR) / "src";
  for (auto& e : std::filesystem::recursive_directory_iterator(src)) {
    const auto rel = e.path().lexically_relative(src).generic_string();
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".h") || rel.starts_with("kernels/")) continue;
    out.emplace_back(rel, slurp(e.path()));
  }
  return out;
}

}  // namespace opforge::test_util

/// A tool that scripts/deps installs is missing: skipped on a developer's machine, failed in CI,
/// where a skip would hide that the test never ran. Use in a TEST body or SetUp().
#define OPFORGE_SKIP_UNLESS_CI(why)                                                             \
  do {                                                                                          \
    if (::opforge::test_util::in_ci()) GTEST_FAIL() << (why) << " (CI=true: run scripts/deps)"; \
    GTEST_SKIP() << (why);                                                                      \
  } while (0)
