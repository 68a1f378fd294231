// The line of a failed build's log that says why, and the log's tail with Python's traceback frames
// shortened: read from captured outputs of setuptools with torch's ninja (a missing source, an nvcc
// error) and of setuptools without ninja (gcc errors).
#include "compile/watch/compile_errors.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace opforge::compile {
namespace {

std::string read_log(const std::string& name) {
  std::ifstream in(std::string(OPFORGE_SOURCE_DIR) + "/tests/data/build_logs/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// An sdist without its CUDA sources: ninja stops before compiling anything, and the traceback of
// torch's cpp_extension and setuptools (68 lines) follows its one line.
TEST(CompileErrors, NinjasMissingInputSaysWhyBeforeTheTraceback) {
  const std::string log = read_log("setuptools_ninja_missing_source.log");
  EXPECT_EQ(failure_reason(log, "/build/causal_conv1d-1.5.2"),
            "ninja: error: '/build/causal_conv1d-1.5.2/csrc/causal_conv1d.cpp', needed by "
            "'/build/causal_conv1d-1.5.2/build/temp.linux-x86_64-cpython-312/csrc/causal_conv1d.o', missing and no "
            "known rule to make it");
  EXPECT_EQ(log_tail(log, 14),
            "ninja: error: '/build/causal_conv1d-1.5.2/csrc/causal_conv1d.cpp', needed by "
            "'/build/causal_conv1d-1.5.2/build/temp.linux-x86_64-cpython-312/csrc/causal_conv1d.o', missing and no "
            "known rule to make it\n"
            "Traceback (most recent call last):\n"
            "  [1 frame left out]\n"
            "  File \"/usr/lib/python3.12/subprocess.py\", line 573, in run\n"
            "    raise CalledProcessError(retcode, process.args,\n"
            "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.\n"
            "\n"
            "The above exception was the direct cause of the following exception:\n"
            "\n"
            "Traceback (most recent call last):\n"
            "  [25 frames left out]\n"
            "  File \"/opt/venv/lib/python3.12/site-packages/torch/utils/cpp_extension.py\", line 2522, in "
            "_run_ninja_build\n"
            "    raise RuntimeError(message) from e\n"
            "RuntimeError: Error compiling objects for extension");
}

// nvcc's error under ninja's FAILED: line and the command: the compiler's words, the path made
// relative to the tree.
TEST(CompileErrors, NvccErrorBeatsNinjasFailedLine) {
  const std::string log = read_log("setuptools_ninja_nvcc_error.log");
  EXPECT_EQ(failure_reason(log, "/build/mamba"),
            "csrc/selective_scan/reverse_scan.cuh:225: error: namespace \"cub\" has no member \"Sum\"");
  EXPECT_EQ(failure_reason(log, "/elsewhere"),
            "/build/mamba/csrc/selective_scan/reverse_scan.cuh:225: error: namespace \"cub\" has no member \"Sum\"");
}

// setuptools without ninja: gcc's first error, not the warnings before it nor setuptools' last line.
TEST(CompileErrors, GccsFirstErrorBeatsSetuptoolsCommandFailed) {
  const std::string log = read_log("setuptools_gcc_error.log");
  EXPECT_EQ(failure_reason(log, "/build/flash-attention"),
            "csrc/fused_dense_lib/fused_dense.cpp:37: error: 'DISPATCH_HALF_AND_BF16' was not declared in this scope");
  // No traceback: the tail is the log's last lines as they are.
  EXPECT_EQ(log_tail(log, 3),
            "   52 | }\n      | ^\nerror: command '/usr/bin/x86_64-linux-gnu-g++' failed with exit code 1");
}

TEST(CompileErrors, OtherReasonsInOrder) {
  // nvcc's driver refuses an option before compiling anything.
  EXPECT_EQ(
      failure_reason("FAILED: /t/build/a.o\n/usr/local/cuda/bin/nvcc -gencode arch=compute_120,code=sm_120 -c a.cu\n"
                     "nvcc fatal   : Unsupported gpu architecture 'compute_120'\n",
                     "/t"),
      "nvcc fatal   : Unsupported gpu architecture 'compute_120'");
  // ninja's own error beats an earlier line that only mentions one.
  EXPECT_EQ(failure_reason(
                "note: error: is a word here\nninja: error: loading 'build.ninja': No such file or directory\n", "/t"),
            "ninja: error: loading 'build.ninja': No such file or directory");
  EXPECT_EQ(
      failure_reason("running build_ext\nerror: command '/usr/local/cuda/bin/nvcc' failed with exit code 1\n", "/t"),
      "error: command '/usr/local/cuda/bin/nvcc' failed with exit code 1");
  // A Python error alone says nothing a line of the tail would not: no reason, the tail says it.
  EXPECT_EQ(failure_reason("Traceback (most recent call last):\n  File \"setup.py\", line 3, in <module>\n"
                           "    import torch\nModuleNotFoundError: No module named 'torch'\n",
                           "/t"),
            std::nullopt);
  EXPECT_EQ(failure_reason("", "/t"), std::nullopt);
  EXPECT_EQ(first_compiler_error("running build_ext\nKilled\n", "/t"), "Killed");
}

TEST(CompileErrors, TailEdges) {
  EXPECT_EQ(log_tail("", 5), "");
  EXPECT_EQ(log_tail("a\nb\nc\n", 2), "b\nc");
  EXPECT_EQ(log_tail("a\nb\nc", 5), "a\nb\nc");
  // One frame stays as it is; a traceback cut off after its header keeps the header.
  EXPECT_EQ(log_tail("Traceback (most recent call last):\n  File \"s.py\", line 1, in <module>\n    f()\nE: x\n", 9),
            "Traceback (most recent call last):\n  File \"s.py\", line 1, in <module>\n    f()\nE: x");
  EXPECT_EQ(log_tail("x\nTraceback (most recent call last):\n", 9), "x\nTraceback (most recent call last):");
}

}  // namespace
}  // namespace opforge::compile
