// op.toml's [machine.<platform>] tables: parsing, their errors, for_platform's merge, and the
// bundled cpu_adam manifest as each machine's compiler sees it.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "ops/ops.h"
#include "target/cpu.h"

namespace opforge::ops {
namespace {

using Names = std::vector<std::string>;
using Paths = std::vector<fs::path>;

const std::string kHead = "name = \"x\"\nkind = \"cpu\"\nsources = [\"a.cpp\", \"s.cpp\"]\n";

const std::string kTwoMachines = kHead +
                                 "[source_flags]\n"
                                 "\"s.cpp\" = [\"-fno-tree-vectorize\"]\n"
                                 "[machine.x86_64]\n"
                                 "sources = [\"avx2.cpp\"]\n"
                                 "[machine.x86_64.source_flags]\n"
                                 "\"avx2.cpp\" = [\"-mavx2\"]\n"
                                 "\"s.cpp\" = [\"-mno-avx\"]\n"
                                 "[machine.aarch64]\n"
                                 "sources = [\"neon.cpp\", \"sve.cpp\"]\n"
                                 "source_flags = { \"sve.cpp\" = [\"-march=armv8.2-a+sve\"] }\n";

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST(OpsManifestMachine, EachMachineGetsTheCommonSourcesThenItsOwn) {
  auto m = parse_manifest("/ops/x/op.toml", kTwoMachines);
  ASSERT_TRUE(m) << m.error().render();
  EXPECT_EQ(m->sources, (Paths{"a.cpp", "s.cpp"}));
  ASSERT_EQ(m->machines.size(), 2u);

  Manifest x86 = for_platform(*m, "x86_64");
  EXPECT_EQ(x86.sources, (Paths{"a.cpp", "s.cpp", "avx2.cpp"}));
  EXPECT_EQ(x86.source_flags.at("avx2.cpp"), Names{"-mavx2"});
  EXPECT_EQ(x86.source_flags.at("s.cpp"), (Names{"-fno-tree-vectorize", "-mno-avx"}));  // common first
  EXPECT_TRUE(x86.machines.empty());

  Manifest arm = for_platform(*m, "aarch64");
  EXPECT_EQ(arm.sources, (Paths{"a.cpp", "s.cpp", "neon.cpp", "sve.cpp"}));
  EXPECT_EQ(arm.source_flags.at("sve.cpp"), Names{"-march=armv8.2-a+sve"});
  EXPECT_EQ(arm.source_flags.at("s.cpp"), Names{"-fno-tree-vectorize"});
  EXPECT_FALSE(arm.source_flags.contains("avx2.cpp"));

  // Applied twice, or for a machine without a table: nothing more.
  Manifest again = for_platform(arm, "aarch64");
  EXPECT_EQ(again.sources, arm.sources);
  EXPECT_EQ(again.source_flags, arm.source_flags);
  EXPECT_EQ(for_platform(*m, "riscv64").sources, m->sources);
}

TEST(OpsManifestMachine, WithoutTheTableTheManifestIsUnchanged) {
  auto m = parse_manifest("/ops/x/op.toml", kHead + "[source_flags]\n\"a.cpp\" = [\"-O3\"]\n");
  ASSERT_TRUE(m) << m.error().render();
  EXPECT_TRUE(m->machines.empty());
  for (const char* platform : {"x86_64", "aarch64"}) {
    Manifest p = for_platform(*m, platform);
    EXPECT_EQ(p.sources, m->sources);
    EXPECT_EQ(p.source_flags, m->source_flags);
  }
}

TEST(OpsManifestMachine, AnUnknownMachineIsRefusedAtItsLineWithTheKnownOnes) {
  auto m = parse_manifest("op.toml", kHead + "[machine.arm64]\nsources = [\"n.cpp\"]\n");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message, "[machine.arm64] names no machine opforge builds for");
  EXPECT_EQ(m.error().hint, "the machines are \"x86_64\", \"aarch64\"");
  EXPECT_TRUE(m.error().render().starts_with("op.toml:4:")) << m.error().render();
}

TEST(OpsManifestMachine, ItsSourcesAndFlagsAreChecked) {
  auto twice = parse_manifest("op.toml", kHead + "[machine.x86_64]\nsources = [\"a.cpp\"]\n");
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().message, "machine.x86_64.sources names 'a.cpp', which is already in the common sources");
  auto cu = parse_manifest("op.toml", kHead + "[machine.aarch64]\nsources = [\"k.cu\"]\n");
  ASSERT_FALSE(cu);
  EXPECT_EQ(cu.error().message, "source 'k.cu' is CUDA but kind is \"cpu\"");
  auto outside = parse_manifest("/ops/x/op.toml", kHead + "[machine.aarch64]\nsources = [\"../../../n.cpp\"]\n");
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().message.find("leads outside the source tree"), std::string::npos);
  // Flags of a file that is neither common nor the machine's own (another machine's).
  auto other = parse_manifest("op.toml", kHead +
                                             "[machine.x86_64]\nsources = [\"avx2.cpp\"]\n"
                                             "[machine.aarch64.source_flags]\n\"avx2.cpp\" = [\"-mavx2\"]\n");
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().message, "machine.aarch64.source_flags names 'avx2.cpp', which is not in sources");
  auto key = parse_manifest("op.toml", kHead + "[machine.x86_64]\ncxx_flag = [\"-O3\"]\n");
  ASSERT_FALSE(key);
  EXPECT_NE(key.error().message.find("unknown key 'cxx_flag' in [machine.x86_64]"), std::string::npos)
      << key.error().message;
}

// The bundled cpu_adam: every ISA flag only on its own machine, and the aarch64 flags are what
// the cpu_target check's allowance reads (SVE for adam_sve.cpp).
TEST(OpsManifestMachine, BundledCpuAdamPerMachine) {
  const fs::path file = fs::path(OPFORGE_SOURCE_DIR) / "src/kernels/cpu_adam/op.toml";
  auto m = parse_manifest(file, read(file), fs::path(OPFORGE_SOURCE_DIR) / "src/kernels");
  ASSERT_TRUE(m) << m.error().render();
  Manifest x86 = for_platform(*m, "x86_64");
  EXPECT_EQ(x86.sources, (Paths{"adam.cpp", "adam_scalar.cpp", "adam_x86.cpp", "adam_avx2.cpp", "adam_avx512.cpp"}));
  Manifest arm = for_platform(*m, "aarch64");
  EXPECT_EQ(arm.sources, (Paths{"adam.cpp", "adam_scalar.cpp", "adam_arm.cpp", "adam_neon.cpp", "adam_sve.cpp"}));
  std::vector<std::string> arm_flags, x86_flags;
  for (const auto& [f, flags] : arm.source_flags) arm_flags.insert(arm_flags.end(), flags.begin(), flags.end());
  for (const auto& [f, flags] : x86.source_flags) x86_flags.insert(x86_flags.end(), flags.begin(), flags.end());
  for (const auto& flag : arm_flags) EXPECT_FALSE(flag.starts_with("-mavx") || flag == "-mfma") << flag;
  EXPECT_TRUE(target::families_of_flags(arm_flags).contains("SVE"));
  EXPECT_FALSE(target::families_of_flags(arm_flags).contains("SVE2"));
  EXPECT_TRUE(target::families_of_flags(x86_flags).contains("AVX-512F"));
}

}  // namespace opforge::ops
