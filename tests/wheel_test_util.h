#pragma once
// Test helpers for the wheel tests: real gcc/nvcc builds of tiny shared libraries into a temp dir.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace opforge::wheel::testing {

inline std::filesystem::path temp_dir(const std::string& tag) {
  auto dir = std::filesystem::temp_directory_path() /
             ("opforge-wheel-" + tag + "-" + std::to_string(::getpid()));
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

/// Compiles `source` (C) into a shared library with gcc and returns its bytes ("" on failure).
inline std::string build_so(const std::string& tag, const std::string& source,
                            const std::string& extra_flags = "") {
  auto dir = temp_dir(tag);
  spit(dir / "lib.c", source);
  std::string cmd = "gcc -shared -fPIC -O2 " + extra_flags + " -o " + (dir / "lib.so").string() +
                    " " + (dir / "lib.c").string() + " 2>&1";
  if (std::system(cmd.c_str()) != 0) return "";
  return slurp(dir / "lib.so");
}

}  // namespace opforge::wheel::testing
