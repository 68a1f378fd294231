// ISA classification on objects the real gcc compiles here, and the target table checked against
// what gcc itself defines for each -march name and -m flag.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "util/strings.h"
#include "wheel/isa.h"
#include "wheel_test_util.h"

namespace opforge::wheel {
namespace {

using target::cpu_target_names;
using target::families_of_flags;
using target::find_cpu_target;
using target::isa_families;

using testing::slurp;
using testing::spit;
using testing::temp_dir;

/// Compiles C `source` with gcc and `flags` into an object (or, with "-shared -fPIC", a library).
std::string compile(const std::string& tag, const std::string& source, const std::string& flags, bool shared = false) {
  auto dir = temp_dir("isa-" + tag);
  spit(dir / "t.c", source);
  auto out = dir / (shared ? "t.so" : "t.o");
  std::string cmd = "gcc -O2 " + flags + (shared ? " -shared -fPIC -o " : " -c -o ") + out.string() + " " +
                    (dir / "t.c").string() + " 2>&1";
  if (std::system(cmd.c_str()) != 0) return "";
  return slurp(out);
}

std::vector<std::string> names(const IsaUse& use) {
  std::vector<std::string> out;
  for (auto& f : use.families) out.push_back(f.family);
  return out;
}

// gcc emits `rep bsf` (= tzcnt) for __builtin_ctz in generic code: still baseline.
const char* kScalar =
    "float dot(const float* a, const float* b, int n) {\n"
    "  float s = 0; for (int i = 0; i < n; ++i) s += a[i] * b[i]; return s; }\n"
    "int lowest(unsigned long x) { return x ? __builtin_ctzl(x) : 64; }\n";

}  // namespace

TEST(WheelIsa, BaselineObjectIsX8664) {
  auto obj = compile("base", kScalar, "-march=x86-64");
  ASSERT_FALSE(obj.empty());
  auto use = read_isa(obj);
  ASSERT_TRUE(use) << use.error().message;
  EXPECT_TRUE(use->analysed);
  EXPECT_EQ(use->level, 1);
  EXPECT_TRUE(use->families.empty()) << strings::join(names(*use), " ");
  EXPECT_GT(use->instructions, 0u);
  EXPECT_EQ(use->undecodable, 0u);
  EXPECT_EQ(use->summary(), "x86-64");
}

TEST(WheelIsa, Crc32IsSse42AndLevelTwo) {
  auto obj = compile("crc",
                     "#include <nmmintrin.h>\n"
                     "unsigned crc(unsigned c, unsigned v) { return _mm_crc32_u32(c, v); }\n",
                     "-march=x86-64 -msse4.2");
  ASSERT_FALSE(obj.empty());
  auto use = read_isa(obj);
  ASSERT_TRUE(use);
  EXPECT_EQ(names(*use), std::vector<std::string>{"SSE4.2"});
  EXPECT_EQ(use->summary(), "x86-64-v2");
}

TEST(WheelIsa, Avx2AndFmaAreLevelThreeWithTheirFunction) {
  auto obj = compile("avx2",
                     "#include <immintrin.h>\n"
                     "__m256i add(__m256i a, __m256i b) { return _mm256_add_epi32(a, b); }\n"
                     "__m256 fmadd(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }\n",
                     "-march=x86-64 -mavx2 -mfma");
  ASSERT_FALSE(obj.empty());
  auto use = read_isa(obj);
  ASSERT_TRUE(use);
  EXPECT_EQ(use->level, 3);
  EXPECT_EQ(names(*use), (std::vector<std::string>{"AVX2", "FMA"}));
  EXPECT_EQ(use->families[0].first_mnemonic, "vpaddd");
  EXPECT_EQ(use->families[0].first_symbol, "add");
  EXPECT_EQ(use->families[1].first_symbol, "fmadd");
  EXPECT_EQ(use->families[1].count, 1u);
}

TEST(WheelIsa, Avx512InALibraryIsLevelFourAndAboveV3) {
  auto so = compile("avx512",
                    "#include <immintrin.h>\n"
                    "__attribute__((visibility(\"default\"))) void scale(float* x, float k) {\n"
                    "  _mm512_storeu_ps(x, _mm512_mul_ps(_mm512_loadu_ps(x), _mm512_set1_ps(k))); }\n"
                    "__attribute__((visibility(\"default\"))) void mscale(float* x, float k) {\n"
                    "  _mm256_storeu_ps(x, _mm256_mask_mul_ps(_mm256_loadu_ps(x), 0x0f,\n"
                    "                  _mm256_loadu_ps(x), _mm256_set1_ps(k))); }\n",
                    "-march=x86-64 -mavx512f -mavx512vl", true);
  ASSERT_FALSE(so.empty());
  auto use = read_isa(so);
  ASSERT_TRUE(use);
  EXPECT_EQ(use->level, 4);
  EXPECT_EQ(use->summary(), "x86-64-v4");
  auto fams = names(*use);
  ASSERT_GE(fams.size(), 2u);
  EXPECT_EQ(fams[fams.size() - 2], "AVX-512F");
  EXPECT_EQ(fams.back(), "AVX-512VL");
  EXPECT_EQ(use->families[fams.size() - 1].first_symbol, "mscale");

  auto v3 = find_cpu_target("x86-64-v3");
  ASSERT_TRUE(v3);
  auto above = above_target(*use, *v3);
  ASSERT_EQ(above.size(), 2u);
  EXPECT_EQ(above[0].family, "AVX-512F");
  EXPECT_TRUE(above_target(*use, *v3, families_of_flags({"-mavx512f", "-mavx512vl"})).empty());
  EXPECT_TRUE(above_target(*use, *find_cpu_target("x86-64-v4")).empty());
}

// Code our own ops mark (OPFORGE_DISPATCHED: the opforge_dispatch section) and gcc's function
// multiversioning clones run only after a CPU check: dispatched, not the library's level.
TEST(WheelIsa, DispatchSectionIsDispatchedNotBaseline) {
  auto so = compile("dispatch-section",
                    "#include <immintrin.h>\n"
                    "__attribute__((section(\"opforge_dispatch\"), target(\"avx512f\")))\n"
                    "void scale512(float* x, float k) {\n"
                    "  _mm512_storeu_ps(x, _mm512_mul_ps(_mm512_loadu_ps(x), _mm512_set1_ps(k))); }\n"
                    "float plain(const float* x) { return x[0] * 2.0f; }\n",
                    "-march=x86-64", true);
  ASSERT_FALSE(so.empty());
  auto use = read_isa(so);
  ASSERT_TRUE(use);
  EXPECT_EQ(use->level, 1);
  EXPECT_TRUE(use->families.empty());
  ASSERT_FALSE(use->dispatched.empty());
  bool avx512 = false;
  for (auto& f : use->dispatched) {
    avx512 = avx512 || f.family == "AVX-512F";
    EXPECT_EQ(f.dispatch, "section opforge_dispatch") << f.family;
  }
  EXPECT_TRUE(avx512) << use->summary();
  EXPECT_TRUE(use->summary().starts_with("x86-64; dispatched at run time: ")) << use->summary();
  EXPECT_TRUE(above_target(*use, *find_cpu_target("x86-64-v2")).empty());
}

TEST(WheelIsa, MultiversioningClonesAreDispatched) {
  auto so = compile("dispatch-clones",
                    "__attribute__((target_clones(\"avx2\", \"arch=x86-64-v4\", \"default\")))\n"
                    "float dot(const float* a, const float* b, int n) {\n"
                    "  float s = 0; for (int i = 0; i < n; ++i) s += a[i] * b[i]; return s; }\n",
                    "-march=x86-64 -ffast-math", true);
  ASSERT_FALSE(so.empty());
  auto use = read_isa(so);
  ASSERT_TRUE(use);
  EXPECT_EQ(use->level, 1) << use->summary();
  ASSERT_FALSE(use->dispatched.empty()) << use->summary();
  for (auto& f : use->dispatched) {
    EXPECT_GE(f.level, 3) << f.family;
    EXPECT_TRUE(f.dispatch.starts_with("multiversioning clone dot.")) << f.dispatch;
  }
}

TEST(WheelIsa, DispatchCloneNames) {
  for (auto name :
       {"dot.avx2", "_Z3dotPKfS0_i.arch_x86_64_v4", "_Z3dotPKfS0_i.avx2.0", "f.arch_x86-64-v4.1", "f.avx512f", "f.fma"})
    EXPECT_TRUE(is_dispatch_clone(name)) << name;
  for (auto name : {"dot", "dot.default", "f.default.2", "f.resolver", "f.ifunc", "f.constprop.0", "f.part.0", "f.cold",
                    ".avx2", "get_available_features.constprop.0"})
    EXPECT_FALSE(is_dispatch_clone(name)) << name;
}

TEST(WheelIsa, AesIsOutsideTheLevels) {
  auto obj = compile("aes",
                     "#include <wmmintrin.h>\n"
                     "__m128i enc(__m128i a, __m128i k) { return _mm_aesenc_si128(a, k); }\n",
                     "-march=x86-64 -maes");
  ASSERT_FALSE(obj.empty());
  auto use = read_isa(obj);
  ASSERT_TRUE(use);
  EXPECT_EQ(names(*use), std::vector<std::string>{"AES"});
  EXPECT_EQ(use->summary(), "x86-64 + AES");
  EXPECT_EQ(above_target(*use, *find_cpu_target("x86-64-v4")).size(), 1u);
  EXPECT_TRUE(above_target(*use, *find_cpu_target("skylake")).empty());
  EXPECT_EQ(above_target(*use, *find_cpu_target("haswell")).size(), 1u);  // gcc's haswell has no AES
}

TEST(WheelIsa, OtherMachinesAreNotAnalysed) {
  auto obj = compile("riscv", kScalar, "");
  ASSERT_GT(obj.size(), 20u);
  obj[18] = static_cast<char>(243);  // e_machine = EM_RISCV (little-endian u16 at offset 18)
  obj[19] = 0;
  auto use = read_isa(obj);
  ASSERT_TRUE(use);
  EXPECT_FALSE(use->analysed);
  EXPECT_EQ(use->summary(), "not analysed (code of no machine opforge builds for (e_machine 243))");
  EXPECT_FALSE(read_isa("not an elf"));
}

TEST(WheelIsa, TargetsAllowWhatGccEnablesForThem) {
  for (const auto& name : cpu_target_names("x86_64")) {
    auto t = find_cpu_target(name);
    ASSERT_TRUE(t) << name;
    EXPECT_EQ(t->families, testing::gcc_families("gcc", "x86_64", "-march=" + name)) << name;
  }
  EXPECT_FALSE(find_cpu_target("native"));
  EXPECT_FALSE(find_cpu_target("x86-64-v5"));
}

TEST(WheelIsa, FlagFamiliesMatchGccImplications) {
  for (std::string flag : {"-msse4.2", "-mavx", "-mavx2", "-mfma", "-mf16c", "-mavx512f", "-mavx512vl", "-mavx512bw",
                           "-mavx512dq", "-mbmi2", "-maes"})
    EXPECT_EQ(families_of_flags({flag}), testing::gcc_families("gcc", "x86_64", "-march=x86-64 " + flag)) << flag;
  // opforge's cpu_adam sources, as their op.toml gives them.
  EXPECT_EQ(families_of_flags({"-mavx2", "-mfma", "-mf16c", "-O3"}),
            testing::gcc_families("gcc", "x86_64", "-march=x86-64 -mavx2 -mfma -mf16c"));
}

}  // namespace opforge::wheel
