// AArch64: the CPU target table checked against what the Debian cross gcc defines for each name,
// and the ISA reader on objects that gcc compiles here (skipped without aarch64-linux-gnu-gcc).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "target/arm.h"
#include "util/strings.h"
#include "wheel/isa.h"
#include "wheel/isa_aarch64.h"
#include "wheel_test_util.h"

namespace opforge::wheel {
namespace {

using testing::slurp;
using testing::spit;
using testing::temp_dir;

const char* kGcc = "aarch64-linux-gnu-gcc";

bool have_cross_gcc() { return std::system("aarch64-linux-gnu-gcc --version >/dev/null 2>&1") == 0; }

/// Compiles `source` (C, or C++ with a .cpp `file`) with the cross gcc into a shared library.
std::string cross_compile(const std::string& tag, const std::string& source, const std::string& flags,
                          const std::string& file = "t.c") {
  auto dir = temp_dir("isa-arm-" + tag);
  spit(dir / file, source);
  auto out = dir / "t.so";
  std::string cmd =
      std::string(kGcc) + " -O2 -shared -fPIC " + flags + " -o " + out.string() + " " + (dir / file).string() + " 2>&1";
  if (std::system(cmd.c_str()) != 0) return "";
  return slurp(out);
}

std::vector<std::string> names(const std::vector<FamilyUse>& uses) {
  std::vector<std::string> out;
  for (auto& f : uses) out.push_back(f.family);
  return out;
}

IsaUse read(const std::string& so) {
  auto use = read_isa(so);
  EXPECT_TRUE(use) << use.error().message;
  return use ? *use : IsaUse{};
}

#define NEED_CROSS_GCC() \
  if (!have_cross_gcc()) GTEST_SKIP() << "no aarch64-linux-gnu-gcc (Debian: g++-aarch64-linux-gnu)"

}  // namespace

TEST(CpuTargetArm, TableNamesPlatformsFlagsAndLevels) {
  EXPECT_EQ(target::cpu_target_names("aarch64"),
            (std::vector<std::string>{"armv8-a", "armv8.2-a", "armv8.4-a", "armv9-a", "neoverse-n1", "neoverse-v1",
                                      "neoverse-v2"}));
  auto all = target::cpu_target_names();
  EXPECT_EQ(all.front(), "x86-64");
  EXPECT_EQ(all.back(), "neoverse-v2");
  EXPECT_TRUE(target::cpu_target_names("riscv64").empty());
  EXPECT_EQ(target::find_cpu_target("x86-64-v3")->platform, "x86_64");
  auto base = target::find_cpu_target("armv8-a");
  ASSERT_TRUE(base);
  EXPECT_EQ(base->platform, "aarch64");
  EXPECT_TRUE(base->is_level());
  EXPECT_TRUE(base->families.empty());
  EXPECT_EQ(base->arch, "armv8-a");
  EXPECT_EQ(base->tune, "generic");
  auto grace = target::find_cpu_target("neoverse-v2");
  ASSERT_TRUE(grace);
  EXPECT_FALSE(grace->is_level());
  EXPECT_EQ(grace->level, 4);
  EXPECT_TRUE(grace->allows("SVE2") && grace->allows("BF16") && grace->allows("I8MM") && grace->allows("LSE"));
  EXPECT_EQ(grace->arch, "armv9-a+bf16+i8mm+sve2-bitperm+rng+memtag");
  EXPECT_FALSE(target::find_cpu_target("armv8.2-a")->allows("FP16"));  // optional in Armv8.2-A: gcc leaves it out
  EXPECT_EQ(target::level_name("aarch64", 2), "armv8.2-a");
  EXPECT_EQ(target::level_name("x86_64", 3), "x86-64-v3");
  EXPECT_EQ(target::find_family("aarch64", "SVE")->level, 4);
  EXPECT_EQ(target::find_family("x86_64", "SVE"), nullptr);
}

TEST(CpuTargetArm, TargetsAllowWhatTheCrossGccEnablesForThem) {
  NEED_CROSS_GCC();
  for (const auto& name : target::cpu_target_names("aarch64")) {
    auto t = target::find_cpu_target(name);
    ASSERT_TRUE(t) << name;
    EXPECT_EQ(t->families, testing::gcc_families(kGcc, "aarch64", "-march=" + t->arch)) << name;
  }
  // gcc 12 knows these two as -mcpu (not neoverse-v2): the same families.
  for (const char* cpu : {"neoverse-n1", "neoverse-v1"})
    EXPECT_EQ(target::find_cpu_target(cpu)->families,
              testing::gcc_families(kGcc, "aarch64", std::string("-mcpu=") + cpu))
        << cpu;
}

TEST(CpuTargetArm, FlagFamiliesMatchTheCrossGcc) {
  NEED_CROSS_GCC();
  for (std::string flag :
       {"-march=armv8.2-a+sve", "-march=armv8-a+sve2", "-march=armv8.2-a+fp16+dotprod", "-march=armv8.4-a+bf16+i8mm",
        "-march=armv9-a+nosve2", "-mcpu=neoverse-n1", "-mcpu=neoverse-v1+nosve"})
    EXPECT_EQ(target::families_of_flags({flag}), testing::gcc_families(kGcc, "aarch64", flag)) << flag;
  EXPECT_TRUE(target::families_of_flags({"-mavx2", "-O2"}).contains("AVX2"));  // x86's still read
}

TEST(WheelIsaArm, EncodingsOfEachFamily) {
  // Words as aarch64-linux-gnu-objdump shows them.
  EXPECT_EQ(aarch64_family(0x4e20cc20), "");         // fmla v0.4s, v1.4s, v0.4s (NEON)
  EXPECT_EQ(aarch64_family(0x0e216800), "");         // fcvtn v0.4h, v0.4s (armv8-a)
  EXPECT_EQ(aarch64_family(0x1ee24000), "");         // fcvt s0, h0 (armv8-a)
  EXPECT_EQ(aarch64_family(0xd503201f), "");         // nop
  EXPECT_EQ(aarch64_family(0x65a00000), "SVE");      // fmla z0.s, p0/m, z0.s, z0.s
  EXPECT_EQ(aarch64_family(0x25e523d0), "SVE");      // ctermne x30, x5
  EXPECT_EQ(aarch64_family(0x45c07000), "SVE2");     // smullb z0.d, z0.s, z0.s
  EXPECT_EQ(aarch64_family(0xb8e08020), "LSE");      // swpal w0, w0, [x1]
  EXPECT_EQ(aarch64_family(0x88e0fc20), "LSE");      // casal w0, w0, [x1]
  EXPECT_EQ(aarch64_family(0xb8bfc020), "");         // ldapr w0, [x1] (RCPC)
  EXPECT_EQ(aarch64_family(0x1ac04800), "CRC32");    // crc32w w0, w0, w0
  EXPECT_EQ(aarch64_family(0x6e809400), "DotProd");  // udot v0.4s, v0.16b, v0.16b
  EXPECT_EQ(aarch64_family(0x1ee20800), "FP16");     // fmul h0, h0, h2
  EXPECT_EQ(aarch64_family(0x2e40fc00), "BF16");     // bfdot v0.2s, v0.4h, v0.4h
  EXPECT_EQ(aarch64_family(0x4e80a400), "I8MM");     // smmla v0.4s, v0.16b, v0.16b
  EXPECT_TRUE(aarch64_unallocated(0x00000000));      // udf #0
}

TEST(WheelIsaArm, NeonOnlyLibraryIsTheBaseline) {
  NEED_CROSS_GCC();
  auto so = cross_compile("neon",
                          "#include <arm_neon.h>\n"
                          "void axpy(float* y, const float* x, float a, int n) {\n"
                          "  for (int i = 0; i + 4 <= n; i += 4)\n"
                          "    vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vld1q_f32(x + i), a)); }\n"
                          "void half(unsigned short* o, const float* x) {\n"
                          "  vst1_u16(o, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x)))); }\n"
                          "float dot(const float* a, const float* b, int n) {\n"
                          "  float s = 0; for (int i = 0; i < n; ++i) s += a[i] * b[i]; return s; }\n",
                          "-march=armv8-a -O3");
  ASSERT_FALSE(so.empty());
  IsaUse use = read(so);
  EXPECT_TRUE(use.analysed);
  EXPECT_EQ(use.platform, "aarch64");
  EXPECT_EQ(use.level, 1);
  EXPECT_TRUE(use.families.empty()) << strings::join(names(use.families), " ");
  EXPECT_GT(use.instructions, 0u);
  EXPECT_EQ(use.summary(), "armv8-a");
  EXPECT_TRUE(above_target(use, *target::find_cpu_target("armv8-a")).empty());
}

TEST(WheelIsaArm, SveAboveArmv8IsReportedAndFailsTheCheck) {
  NEED_CROSS_GCC();
  auto so = cross_compile("sve",
                          "#include <arm_sve.h>\n"
                          "void scale(float* x, float k, long n) {\n"
                          "  for (long i = 0; i < n; i += svcntw()) { svbool_t pg = svwhilelt_b32(i, n);\n"
                          "    svst1(pg, x + i, svmul_n_f32_x(pg, svld1(pg, x + i), k)); } }\n",
                          "-march=armv8.2-a+sve");
  ASSERT_FALSE(so.empty());
  IsaUse use = read(so);
  ASSERT_FALSE(use.families.empty());
  EXPECT_EQ(names(use.families), std::vector<std::string>{"SVE"});  // no SVE2 in SVE-only code
  EXPECT_EQ(use.level, 4);
  EXPECT_EQ(use.summary(), "armv9-a");
  EXPECT_EQ(use.families[0].first_symbol, "scale");
  EXPECT_TRUE(use.families[0].first_mnemonic.starts_with(".inst 0x")) << use.families[0].first_mnemonic;

  auto armv8 = *target::find_cpu_target("armv8-a");
  auto checks = check_cpu_target({{"pkg/libx.so", so}}, armv8, {});
  ASSERT_TRUE(checks);
  auto status = require_cpu_target(*checks, armv8);
  ASSERT_FALSE(status);
  EXPECT_NE(status.error().message.find("pkg/libx.so: SVE ("), std::string::npos) << status.error().message;
  EXPECT_TRUE(above_target(use, *target::find_cpu_target("neoverse-v1")).empty());
  EXPECT_TRUE(above_target(use, armv8, target::families_of_flags({"-march=armv8.2-a+sve"})).empty());
  // An x86-64 target for aarch64 code is a mistake of its own.
  auto wrong = check_cpu_target({{"pkg/libx.so", so}}, *target::find_cpu_target("x86-64-v3"), {});
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("aarch64 code, but cpu_target \"x86-64-v3\" is a CPU of x86_64"),
            std::string::npos);
}

TEST(WheelIsaArm, Sve2IsToldApartFromSve) {
  NEED_CROSS_GCC();
  auto so = cross_compile("sve2",
                          "#include <arm_sve.h>\n"
                          "svint64_t widen(svint32_t a, svint32_t b) { return svmullb_s64(a, b); }\n"
                          "svuint8_t narrow(svuint16_t a, svuint16_t b) { return svaddhnb_u16(a, b); }\n",
                          "-march=armv9-a");
  ASSERT_FALSE(so.empty());
  IsaUse use = read(so);
  EXPECT_EQ(names(use.families), std::vector<std::string>{"SVE2"});
  EXPECT_FALSE(above_target(use, *target::find_cpu_target("neoverse-v1")).empty());  // SVE, no SVE2
  EXPECT_TRUE(above_target(use, *target::find_cpu_target("neoverse-v2")).empty());
}

TEST(WheelIsaArm, ExtensionFamiliesFromRealCode) {
  NEED_CROSS_GCC();
  struct Case {
    const char* family;
    const char* flags;
    const char* code;
  } cases[] = {
      {"LSE", "-march=armv8.1-a", "int add(int* p) { return __atomic_fetch_add(p, 3, __ATOMIC_SEQ_CST); }\n"},
      {"CRC32", "-march=armv8-a+crc",
       "#include <arm_acle.h>\nunsigned c(unsigned a, unsigned b) { return __crc32w(a, b); }\n"},
      {"DotProd", "-march=armv8.2-a+dotprod",
       "#include <arm_neon.h>\nuint32x4_t d(uint32x4_t r, uint8x16_t a, uint8x16_t b) { return vdotq_u32(r, a, b); "
       "}\n"},
      {"FP16", "-march=armv8.2-a+fp16", "_Float16 m(_Float16 a, _Float16 b) { return a * b; }\n"},
      {"BF16", "-march=armv8.6-a",
       "#include <arm_neon.h>\nfloat32x4_t d(float32x4_t r, bfloat16x8_t a, bfloat16x8_t b) { return vbfdotq_f32(r, a, "
       "b); }\n"},
      {"I8MM", "-march=armv8.6-a",
       "#include <arm_neon.h>\nint32x4_t m(int32x4_t r, int8x16_t a, int8x16_t b) { return vmmlaq_s32(r, a, b); }\n"},
  };
  for (const auto& c : cases) {
    auto so = cross_compile(std::string("ext-") + c.family, c.code, c.flags);
    ASSERT_FALSE(so.empty()) << c.family;
    IsaUse use = read(so);
    EXPECT_EQ(names(use.families), std::vector<std::string>{c.family}) << c.flags;
  }
  // Half precision converted, not computed, is armv8-a's own.
  auto cvt = cross_compile(
      "fp16-cvt", "_Float16 h(float x) { return (_Float16)x; }\nfloat f(_Float16 x) { return x; }\n", "-march=armv8-a");
  ASSERT_FALSE(cvt.empty());
  EXPECT_TRUE(read(cvt).families.empty());
}

// libgcc's outline atomics (gcc's default on aarch64) hold LSE instructions behind a run-time
// check; the dispatch section holds our own SVE kernels: both are dispatched, not the baseline.
TEST(WheelIsaArm, OutlineAtomicsAndTheDispatchSectionAreDispatched) {
  NEED_CROSS_GCC();
  auto so = cross_compile("dispatch",
                          "#include <arm_sve.h>\n"
                          "int add(int* p) { return __atomic_fetch_add(p, 3, __ATOMIC_SEQ_CST); }\n"
                          "__attribute__((section(\"opforge_dispatch\"))) void scale(float* x, float k, long n) {\n"
                          "  for (long i = 0; i < n; i += svcntw()) { svbool_t pg = svwhilelt_b32(i, n);\n"
                          "    svst1(pg, x + i, svmul_n_f32_x(pg, svld1(pg, x + i), k)); } }\n",
                          "-march=armv8-a+sve -moutline-atomics");
  ASSERT_FALSE(so.empty());
  IsaUse use = read(so);
  EXPECT_EQ(use.level, 1) << use.summary();
  EXPECT_TRUE(use.families.empty()) << use.summary();
  std::map<std::string, std::string> why;
  for (const auto& f : use.dispatched) why[f.family] = f.dispatch;
  EXPECT_EQ(why["SVE"], "section opforge_dispatch");
  EXPECT_TRUE(why["LSE"].starts_with("libgcc outline atomic __aarch64_")) << why["LSE"];
  EXPECT_EQ(use.summary(), "armv8-a; dispatched at run time: LSE, SVE");
}

// The bundled cpu_adam's aarch64 files, compiled as op.toml says: its SVE is all dispatched, so
// the library passes cpu_target = "armv8-a".
TEST(WheelIsaArm, BundledCpuAdamPassesArmv8) {
  NEED_CROSS_GCC();
  const std::string dir = std::string(OPFORGE_SOURCE_DIR) + "/src/kernels/cpu_adam";
  auto out = temp_dir("isa-arm-cpu-adam");
  std::string inc = " -I" + dir + " -I" + dir + "/../utils ";
  std::string common = "aarch64-linux-gnu-g++ -std=c++17 -O2 -fPIC -fvisibility=hidden" + inc;
  std::string cmd = common + "-c " + dir + "/adam_neon.cpp -o " + (out / "n.o").string() + " && " + common +
                    "-march=armv8.2-a+sve -c " + dir + "/adam_sve.cpp -o " + (out / "s.o").string() + " && " + common +
                    "-c " + dir + "/adam_arm.cpp -o " + (out / "a.o").string() +
                    " && aarch64-linux-gnu-g++ -shared -o " + (out / "lib.so").string() + " " + (out / "n.o").string() +
                    " " + (out / "s.o").string() + " " + (out / "a.o").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  IsaUse use = read(slurp(out / "lib.so"));
  EXPECT_TRUE(use.families.empty()) << use.summary();
  EXPECT_EQ(names(use.dispatched), std::vector<std::string>{"SVE"}) << use.summary();
  auto armv8 = *target::find_cpu_target("armv8-a");
  auto checks = check_cpu_target({{"opforge_ops/_lib/libopforge_cpu_adam.so", slurp(out / "lib.so")}}, armv8, {});
  ASSERT_TRUE(checks);
  EXPECT_TRUE(require_cpu_target(*checks, armv8));
}

}  // namespace opforge::wheel
