#include "compile/command/cmake_log.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace opforge::compile {
namespace {

std::string read_data(const std::string& name) {
  std::ifstream in(std::string(OPFORGE_SOURCE_DIR) + "/tests/data/cmake/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// CMake 3.25's output when find_package(CUDAToolkit 14.0 REQUIRED) finds CUDA 13.0 (captured here).
TEST(CompileCmakeLog, TheFirstErrorInCmakesWordsAndTheCudaItAskedFor) {
  auto e = first_cmake_error(read_data("cudatoolkit_too_old.log"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->text,
            "CMake Error at /usr/share/cmake-3.25/Modules/FindPackageHandleStandardArgs.cmake:230 (message):\n"
            "  Could NOT find CUDAToolkit: Found unsuitable version \"13.0.88\", but\n"
            "  required is at least \"14.0\" (found /usr/local/cuda-13.0/include)");
  EXPECT_EQ(e->wants_cuda, "14.0");
}

TEST(CompileCmakeLog, OtherErrorsAndNone) {
  auto e = first_cmake_error(
      "-- ok\nCMake Error at CMakeLists.txt:3 (message):\n  no Python\n\n-- Configuring incomplete\n");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->text, "CMake Error at CMakeLists.txt:3 (message):\n  no Python");
  EXPECT_EQ(e->wants_cuda, "");
  EXPECT_FALSE(first_cmake_error("print('CMake Error is a phrase')\n-- done\n"));  // not at a line's start
  EXPECT_FALSE(first_cmake_error(""));
}

}  // namespace
}  // namespace opforge::compile
