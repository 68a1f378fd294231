// The CPU-target wrappers: their exact text, and the real gcc run through them.
#include <gtest/gtest.h>

#include "compiler/cpu_target.h"
#include "probe/fake_machine.h"
#include "wheel/isa.h"
#include "wheel_test_util.h"

namespace opforge::compiler {
namespace {

target::CpuTarget target(const std::string& name) { return *target::find_cpu_target(name); }

}  // namespace

TEST(CompilerCpuTarget, WrapperTextForALevel) {
  EXPECT_EQ(wrapper_script("/usr/bin/g++-12", target("x86-64-v3")),
            "#!/bin/sh\n"
            "# Written by opforge (recipe [build] cpu_target = \"x86-64-v3\"): runs /usr/bin/g++-12\n"
            "# for CPU target x86-64-v3 whatever -march=native the build asks for.\n"
            "n=$#\n"
            "while [ \"$n\" -gt 0 ]; do\n"
            "  a=$1\n"
            "  shift\n"
            "  n=$((n - 1))\n"
            "  case $a in\n"
            "    -march=native) a=-march=x86-64-v3 ;;\n"
            "    -mtune=native|-mcpu=native) a=-mtune=generic ;;\n"
            "    -D__AVX512__) a=-D__AVX256__ ;;\n"
            "  esac\n"
            "  set -- \"$@\" \"$a\"\n"
            "done\n"
            "exec /usr/bin/g++-12 \"$@\"\n");
}

TEST(CompilerCpuTarget, WrapperTextForANamedCpuAndAQuotedPath) {
  auto text = wrapper_script("/opt/my gcc/bin/g++", target("skylake-avx512"));
  EXPECT_NE(text.find("    -march=native) a=-march=skylake-avx512 ;;\n"), std::string::npos);
  EXPECT_NE(text.find("    -mtune=native|-mcpu=native) a=-mtune=skylake-avx512 ;;\n"), std::string::npos);
  EXPECT_EQ(text.find("-D__AVX"), std::string::npos);  // AVX-512F: DeepSpeed's macros stay
  EXPECT_NE(text.find("exec '/opt/my gcc/bin/g++' \"$@\"\n"), std::string::npos);
}

TEST(CompilerCpuTarget, SimdMacrosFollowTheTarget) {
  EXPECT_EQ(simd_macro_for("__AVX512__", target("x86-64-v4")), "__AVX512__");
  EXPECT_EQ(simd_macro_for("__AVX512__", target("x86-64-v3")), "__AVX256__");
  EXPECT_EQ(simd_macro_for("__AVX512__", target("x86-64-v2")), "__SCALAR__");
  EXPECT_EQ(simd_macro_for("__AVX256__", target("x86-64-v3")), "__AVX256__");
  EXPECT_EQ(simd_macro_for("__AVX256__", target("x86-64")), "__SCALAR__");
  EXPECT_EQ(simd_macro_for("__AVX512__", target("haswell")), "__AVX256__");
  auto v2 = wrapper_script("/usr/bin/gcc", target("x86-64-v2"));
  EXPECT_NE(v2.find("    -D__AVX512__) a=-D__SCALAR__ ;;\n    -D__AVX256__) a=-D__SCALAR__ ;;\n"), std::string::npos);
}

TEST(CompilerCpuTarget, WrapperDirDependsOnTargetAndCompilerOnly) {
  probe::FakeMachine fm;
  Compiler c{Family::gcc, "/usr/bin/gcc", "/usr/bin/g++", Version{12, 2, 0}, true};
  auto a = wrapper_dir(fm.fs, "/cache", c, target("x86-64-v3"));
  EXPECT_EQ(a, wrapper_dir(fm.fs, "/cache", c, target("x86-64-v3")));
  EXPECT_EQ(a.parent_path(), std::filesystem::path("/cache/cpu-shim"));
  EXPECT_TRUE(a.filename().string().starts_with("x86-64-v3-"));
  EXPECT_NE(a, wrapper_dir(fm.fs, "/cache", c, target("x86-64-v4")));
  Compiler c11{Family::gcc, "/usr/bin/gcc-11", "/usr/bin/g++-11", Version{11, 4, 0}, false};
  EXPECT_NE(a, wrapper_dir(fm.fs, "/cache", c11, target("x86-64-v3")));
}

TEST(CompilerCpuTarget, WritesEveryNameOnceAndLeavesIdenticalFilesAlone) {
  probe::FakeMachine fm;
  fm.fs.add_symlink("/shim/g++", "/usr/bin/g++-11");  // a link from an earlier shim is replaced
  Compiler c{Family::gcc, "/usr/bin/gcc-11", "/usr/bin/g++-11", Version{11, 4, 0}, false};
  ASSERT_TRUE(write_wrappers(fm.fs, "/shim", c, target("x86-64-v3")));
  for (auto name : {"gcc", "g++", "cc", "c++", "gcc-11", "g++-11"}) {
    auto text = fm.fs.read_file(std::filesystem::path("/shim") / name);
    ASSERT_TRUE(text) << name;
    EXPECT_EQ(*text,
              wrapper_script(std::string(name).find("++") != std::string::npos ? "/usr/bin/g++-11" : "/usr/bin/gcc-11",
                             target("x86-64-v3")))
        << name;
    EXPECT_TRUE(fm.fs.is_executable(std::filesystem::path("/shim") / name)) << name;
  }
  auto writes = fm.fs.log().size();
  ASSERT_TRUE(write_wrappers(fm.fs, "/shim", c, target("x86-64-v3")));
  EXPECT_EQ(fm.fs.log().size(), writes);  // nothing rewritten: ccache's mtime check keeps hitting
}

TEST(CompilerCpuTarget, RealGccThroughTheWrapperCompilesForTheTarget) {
  auto dir = test_util::temp_dir("cpu-wrapper");
  auto m = probe::real_machine();
  Compiler c{Family::gcc, "/usr/bin/gcc", "/usr/bin/g++", Version{12, 2, 0}, true};
  ASSERT_TRUE(write_wrappers(m.fs, dir / "shim", c, target("x86-64-v3")));
  // What DeepSpeed passes on an AVX-512 build machine: -march=native and -D__AVX512__, plus an
  // argument with a space that must arrive whole.
  test_util::spit(dir / "k.cpp",
                  "#include <immintrin.h>\n"
                  "#if defined(__AVX512__) || !defined(__AVX256__) || !defined(__AVX2__) || defined(__AVX512F__)\n"
                  "#error wrong target\n"
                  "#endif\n"
                  "static_assert(sizeof(MSG) == 4, \"argument split\");\n"
                  "__m256 f(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }\n");
  std::string cmd = (dir / "shim" / "g++").string() +
                    " -O2 -march=native -mtune=native -D__AVX512__ "
                    "'-DMSG=\"a b\"' -c " +
                    (dir / "k.cpp").string() + " -o " + (dir / "k.o").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto use = wheel::read_isa(test_util::slurp(dir / "k.o"));
  ASSERT_TRUE(use);
  EXPECT_EQ(use->level, 3);
  EXPECT_EQ(use->families.back().family, "FMA");
}

}  // namespace opforge::compiler
