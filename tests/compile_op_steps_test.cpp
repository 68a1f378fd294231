// One op at a time: the command that compiles only the extensions, and the first compiler error
// of a step's log (captured outputs of gcc 12, nvcc 13.0 and setuptools).
#include <gtest/gtest.h>

#include "compile/command/op_steps.h"
#include "compile/watch/compile_errors.h"
#include "util/strings.h"

using namespace opforge;

TEST(CompileOpSteps, BuildExtCommandKeepsThePythonAndSetupPy) {
  EXPECT_EQ(compile::build_ext_command({"python", "setup.py", "bdist_wheel"}),
            (std::vector<std::string>{"python", "setup.py", "build_ext"}));
  EXPECT_EQ(compile::build_ext_command({"/usr/bin/python3", "-u", "/src/setup.py", "bdist_wheel", "-d", "x"}),
            (std::vector<std::string>{"/usr/bin/python3", "-u", "/src/setup.py", "build_ext"}));
  EXPECT_FALSE(compile::build_ext_command({"python", "-m", "build", "--wheel"}));
  EXPECT_FALSE(compile::build_ext_command({}));
}

TEST(CompileOpSteps, FirstErrorOfNvcc) {
  // DeepSpeed's fp_quantizer under nvcc 13.0 (torch's ninja prints the FAILED line first).
  const std::string log =
      "[1/3] c++ -MMD -MF fp_quantize.o.d -c /tmp/t/csrc/fp_quantizer/fp_quantize.cpp\n"
      "FAILED: /tmp/t/build/temp.linux-x86_64-cpython-311/csrc/fp_quantizer/fp_quantize_impl.o\n"
      "/usr/local/cuda/bin/nvcc -c /tmp/t/csrc/fp_quantizer/fp_quantize_impl.cu -o x.o\n"
      "/tmp/t/csrc/fp_quantizer/fp_quantize_impl.cu(234): error: template parameter \"q_exponent_bits\" may not "
      "be redeclared in this scope\n"
      "      template <int q_mantisa_bits, int q_exponent_bits>\n"
      "/tmp/t/csrc/fp_quantizer/fp_quantize_impl.cu(301): error: identifier \"x\" is undefined\n"
      "2 errors detected in the compilation of \"/tmp/t/csrc/fp_quantizer/fp_quantize_impl.cu\".\n"
      "ninja: build stopped: subcommand failed.\n";
  EXPECT_EQ(compile::first_compiler_error(log, "/tmp/t"),
            "csrc/fp_quantizer/fp_quantize_impl.cu:234: error: template parameter \"q_exponent_bits\" may not be "
            "redeclared in this scope");
}

TEST(CompileOpSteps, FirstErrorOfGccAndFallbacks) {
  const std::string gcc =
      "In file included from csrc/includes/cpu_adam.h:12,\n"
      "                 from csrc/adam/cpu_adam.cpp:6:\n"
      "/src/t/csrc/includes/simd.h:40:10: fatal error: immintrin.h: No such file or directory\n"
      "   40 | #include <immintrin.h>\n"
      "compilation terminated.\n";
  EXPECT_EQ(compile::first_compiler_error(gcc, "/src/t"),
            "csrc/includes/simd.h:40: error: immintrin.h: No such file or directory");
  EXPECT_EQ(compile::first_compiler_error("x.cpp:3: error: expected ';'\n", "/src/t"), "x.cpp:3: error: expected ';'");
  // A link error names no source line: the first line saying error.
  const std::string link =
      "/usr/bin/ld: cannot find -ldeepspeedkernels: No such file or directory\n"
      "collect2: error: ld returned 1 exit status\n"
      "error: command '/usr/bin/x86_64-linux-gnu-g++' failed with exit code 1\n";
  EXPECT_EQ(compile::first_compiler_error(link, "/src/t"), "collect2: error: ld returned 1 exit status");
  EXPECT_EQ(compile::first_compiler_error("running build_ext\nKilled\n", "/src/t"), "Killed");
  // ninja stopped by a signal from outside, then torch's traceback.
  const std::string interrupted =
      "[3/12] g++ -c deepspeed_aio_utils.cpp\nninja: build stopped: interrupted by user.\nTraceback (most recent "
      "call last):\nRuntimeError: Error compiling objects for extension\n";
  EXPECT_EQ(compile::first_compiler_error(interrupted, "/src/t"), "ninja: build stopped: interrupted by user.");
  EXPECT_EQ(compile::first_compiler_error("", "/src/t"), "");
}

// The grammar's edges, scanned without std::regex (which recursed once per character).
TEST(CompileOpSteps, ErrorLineGrammarAndUnboundedLines) {
  auto first = [](std::string_view log) { return compile::first_compiler_error(log, "/s"); };
  EXPECT_EQ(first("/s/a b (x).cu(7): catastrophic error: cannot open source file \"q.h\"\n"),
            "a b (x).cu:7: error: cannot open source file \"q.h\"");
  // The last "(N): error: " decides, as the greedy pattern did.
  EXPECT_EQ(first("f(1): error: g(2): error: z\n"), "f(1): error: g:2: error: z");
  EXPECT_EQ(first("/s/k.cu:9:1: error: x\n"), "k.cu:9: error: x");
  EXPECT_EQ(first("k.cu:9:: error: x\n"), "k.cu:9:: error: x");  // no: fallback line
  EXPECT_EQ(first("k.cu:x: error: y\nk.cu:4: error: z\n"), "k.cu:4: error: z");
  EXPECT_EQ(first("k.cu(): error: y\n"), "k.cu(): error: y");  // no number: fallback
  // A megabyte on one line (a minified source in a compiler message) is scanned, not recursed on.
  const std::string huge = "src.cu:1: error: " + std::string(1 << 20, 'x') + "\n";
  EXPECT_EQ(first(huge).size(), 17u + (1u << 20));
  EXPECT_EQ(first(std::string(1 << 20, '(') + "\n"), strings::cut(std::string(1 << 20, '('), 400));
}
