// verify --nodes: the facts a node report gives, the wheel's needs, and every check's verdict.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "doctor/node.h"
#include "rollout/rollout.h"
#include "util/pep440.h"

using namespace opforge;
namespace fs = std::filesystem;

namespace {

std::string data(const std::string& path) {
  std::ifstream in(fs::path(OPFORGE_TEST_DATA) / path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

wheel::FatbinImage image(wheel::FatbinImage::Kind kind, int arch, char suffix = 0, std::pair<int, int> isa = {0, 0}) {
  wheel::FatbinImage i;
  i.kind = kind;
  i.arch = arch;
  i.suffix = suffix;
  i.ptx_isa = isa;
  return i;
}
constexpr auto sass = wheel::FatbinImage::Kind::elf;
constexpr auto ptx = wheel::FatbinImage::Kind::ptx;

/// A cp311 manylinux_2_34 wheel with GPU code `images`, built with CUDA 13.0, pinned to torch 2.15.
rollout::WheelNeeds gpu_wheel(std::vector<wheel::FatbinImage> images) {
  rollout::WheelNeeds w;
  w.filename = "x-1.0-cp311-cp311-manylinux_2_34_x86_64.whl";
  w.python_tags = {"cp311"};
  w.abi_tags = {"cp311"};
  w.platforms = {"manylinux_2_34_x86_64"};
  w.system.glibc_minor = 34;
  w.system.glibcxx = "3.4.30";
  w.cpu_level = 3;
  w.torch = "==2.15.*";
  w.cuda = "13.0";
  w.gpu_libraries = {{"x/_C.so", std::move(images)}};
  return w;
}

/// A node as `opforge doctor --json` on an H100 node reports it (the parts verify reads).
std::string report(const std::string& capability = "9.0",
                   const std::string& driver = R"({"version": "580.65.06", "cuda": "13.0"})") {
  return R"({"gpus": {"reader": "driver API", "devices": [{"index": 0, "name": "GPU", "capability": ")" + capability +
         R"("}]}, "torch": {"python": "python3", "status": "CUDA 13.0", "version": "2.15.0+cu130"},
  "node": {"format": 1, "host": "n1", "machine": "x86_64", "glibc": "2.36", "glibcxx": "3.4.30", "cxxabi": "1.3.13",
           "cpu_level": "x86-64-v3", "python": "3.11", "driver": )" +
         driver + "}}";
}

rollout::Check check_of(const rollout::NodeRow& row, const std::string& name) {
  for (const auto& c : row.checks)
    if (c.name == name) return c;
  ADD_FAILURE() << "no check " << name;
  return {};
}

}  // namespace

TEST(Pep440Satisfies, ReleasesPrefixesAndRanges) {
  EXPECT_EQ(pep440::satisfies("2.15.0+cu132", "==2.15.*"), true);
  EXPECT_EQ(pep440::satisfies("2.14.1", "==2.15.*"), false);
  EXPECT_EQ(pep440::satisfies("2.15", "==2.15.0"), true);
  EXPECT_EQ(pep440::satisfies("2.16.0.dev20261101", ">=2.12"), true);
  EXPECT_EQ(pep440::satisfies("2.11.0", ">=2.12"), false);
  EXPECT_EQ(pep440::satisfies("2.13.0", ">=2.12,!=2.13.*"), false);
  EXPECT_EQ(pep440::satisfies("2.3.0", "~=2.1"), true);
  EXPECT_EQ(pep440::satisfies("3.0", "~=2.1"), false);
  EXPECT_EQ(pep440::satisfies("2.15.0", "<3"), true);
  EXPECT_EQ(pep440::satisfies("x", ">=2"), std::nullopt);
  EXPECT_EQ(pep440::satisfies("2.15", "=>2"), std::nullopt);
  EXPECT_EQ(pep440::satisfies("2.15", ">=2.*"), std::nullopt);
}

TEST(DoctorNode, CpuLevelFromCapturedCpuinfo) {
  const std::string vm = data("cpuinfo/vm-x86-64-v4.txt");
  EXPECT_EQ(doctor::cpu_level_of_cpuinfo(vm), 4);
  std::string no512 = vm;
  for (std::string f : {" avx512f", " avx512bw"})
    for (auto at = no512.find(f + " "); at != std::string::npos; at = no512.find(f + " ")) no512.erase(at, f.size());
  EXPECT_EQ(doctor::cpu_level_of_cpuinfo(no512), 3);
  std::string v2 = no512;
  for (auto at = v2.find(" avx2 "); at != std::string::npos; at = v2.find(" avx2 ")) v2.erase(at, 5);
  EXPECT_EQ(doctor::cpu_level_of_cpuinfo(v2), 2);
  EXPECT_EQ(doctor::cpu_level_of_cpuinfo("flags\t: fpu sse sse2\n"), 1);
  EXPECT_EQ(doctor::cpu_level_of_cpuinfo("processor\t: 0\n"), 0);
}

TEST(DoctorNode, DriverVersionFromProcText) {
  EXPECT_EQ(doctor::nvidia_driver_version(data("nvidia_version/proprietary-535.txt")), "535.104.05");
  EXPECT_EQ(doctor::nvidia_driver_version(data("nvidia_version/open-570.txt")), "570.86.15");
  EXPECT_EQ(doctor::nvidia_driver_version("GCC version: 12.2.0\n"), "");
  EXPECT_EQ(doctor::nvidia_driver_version(""), "");
}

TEST(DoctorNode, NewestVersionAndThisMachinesRuntimes) {
  EXPECT_EQ(doctor::newest_version({"GLIBCXX_3.4", "GLIBCXX_3.4.9", "GLIBCXX_3.4.30", "CXXABI_1.3.13", "GLIBCXX_DEBUG"},
                                   "GLIBCXX"),
            "3.4.30");
  EXPECT_EQ(doctor::newest_version({"GLIBC_2.2.5", "GLIBC_2.36", "GLIBC_PRIVATE"}, "GLIBC"), "2.36");
  EXPECT_EQ(doctor::newest_version({}, "GLIBC"), "");
  // The real libc.so.6 and libstdc++.so.6 of this machine, read through .gnu.version_d.
  auto node = doctor::read_node(probe::real_machine());
  ASSERT_TRUE(node.glibc_minor);
  EXPECT_GE(*node.glibc_minor, 28);
  EXPECT_TRUE(node.glibcxx.starts_with("3.4.")) << node.glibcxx;
  EXPECT_TRUE(node.cxxabi.starts_with("1.3.")) << node.cxxabi;
  EXPECT_GE(node.cpu_level, 1);
}

TEST(RolloutCheck, AnH100NodeRunsSm90) {
  auto w = gpu_wheel({image(sass, 90), image(ptx, 90, 0, {9, 0})});
  auto row = rollout::check_node(w, rollout::parse_node_facts("n1.json", report()));
  EXPECT_EQ(row.node, "n1");
  EXPECT_EQ(row.verdict, rollout::Verdict::ok);
  EXPECT_EQ(check_of(row, "gpu").detail, "GPU 0 (GPU, 9.0): sm_90");
  EXPECT_EQ(check_of(row, "driver").detail, "driver 580.65.06 ≥ 580 for CUDA 13.0");
  EXPECT_EQ(check_of(row, "machine").detail, "x86_64");
  EXPECT_EQ(check_of(row, "platform").detail, "glibc 2.36, libstdc++ GLIBCXX_3.4.30");
}

TEST(RolloutCheck, GpuCodeRules) {
  auto verdict = [](std::vector<wheel::FatbinImage> images, const std::string& cap,
                    const std::string& driver = R"({"version": "580.65.06", "cuda": "13.0"})") {
    auto row =
        rollout::check_node(gpu_wheel(std::move(images)), rollout::parse_node_facts("n.json", report(cap, driver)));
    return check_of(row, "gpu").verdict;
  };
  using V = rollout::Verdict;
  // SASS: the same major at an equal or higher minor.
  EXPECT_EQ(verdict({image(sass, 80)}, "8.6"), V::ok);
  EXPECT_EQ(verdict({image(sass, 80)}, "9.0"), V::fails);
  EXPECT_EQ(verdict({image(sass, 86)}, "8.0"), V::fails);
  // Arch-specific code only on exactly its GPU; family code across the family.
  EXPECT_EQ(verdict({image(sass, 90, 'a')}, "9.0"), V::ok);
  EXPECT_EQ(verdict({image(sass, 100, 'a')}, "10.3"), V::fails);
  EXPECT_EQ(verdict({image(sass, 100, 'f')}, "10.3"), V::ok);
  EXPECT_EQ(verdict({image(sass, 100, 'f')}, "12.0"), V::fails);
  // PTX: JIT on newer GPUs when the driver knows its ISA; arch-specific PTX only on its GPU.
  EXPECT_EQ(verdict({image(ptx, 80, 0, {9, 0})}, "9.0"), V::ok);
  EXPECT_EQ(verdict({image(ptx, 90, 0, {9, 0})}, "8.0"), V::fails);
  EXPECT_EQ(verdict({image(ptx, 90, 'a', {9, 0})}, "10.0"), V::fails);
  EXPECT_EQ(verdict({image(ptx, 80, 0, {9, 0})}, "9.0", R"({"version": "570.124.06", "cuda": "12.8"})"), V::fails);
  EXPECT_EQ(verdict({image(ptx, 80, 0, {8, 7})}, "9.0", R"({"version": "570.124.06", "cuda": "12.8"})"), V::ok);
  // Without the driver API's answer, the driver branch's CUDA (570 → 12.8).
  EXPECT_EQ(verdict({image(ptx, 80, 0, {9, 0})}, "9.0", R"({"version": "570.124.06"})"), V::fails);
  EXPECT_EQ(verdict({image(ptx, 80, 0, {8, 7})}, "9.0", R"({"version": "570.124.06"})"), V::ok);
  // A PTX ISA opforge cannot date: unknown, not a pass.
  EXPECT_EQ(verdict({image(ptx, 80, 0, {9, 9})}, "9.0"), V::unknown);
}

TEST(RolloutCheck, DriverFloorsAndBranches) {
  EXPECT_EQ(rollout::driver_floor(12), "525.60.13");
  EXPECT_EQ(rollout::driver_floor(10), std::nullopt);
  EXPECT_EQ(rollout::cuda_of_driver({580, 65, 6})->str(), "13.0");
  EXPECT_EQ(rollout::cuda_of_driver({535, 104, 5})->str(), "12.2");
  EXPECT_EQ(rollout::cuda_of_driver({440, 0, 0}), std::nullopt);
  EXPECT_EQ(rollout::cuda_of_driver({590, 0, 0}), std::nullopt);
  EXPECT_EQ(rollout::cuda_of_ptx_isa(8, 4)->str(), "12.4");
  EXPECT_EQ(rollout::cuda_of_ptx_isa(8, 6), std::nullopt);
  auto w = gpu_wheel({image(sass, 90)});
  w.cuda = "12.8";
  auto row = rollout::check_node(
      w, rollout::parse_node_facts("n.json", report("9.0", R"({"version": "525.60.13", "cuda": "12.0"})")));
  EXPECT_EQ(check_of(row, "driver").verdict, rollout::Verdict::ok);
  EXPECT_EQ(check_of(row, "driver").detail,
            "driver 525.60.13 ≥ 525.60.13 for CUDA 12.8; it supports CUDA 12.0: the wheel runs by minor-version "
            "compatibility, PTX it cannot JIT");
}

TEST(RolloutCheck, AbiThreeAndPurePythonTags) {
  auto w = gpu_wheel({image(sass, 90)});
  w.python_tags = {"cp38"};
  w.abi_tags = {"abi3"};
  auto row = rollout::check_node(w, rollout::parse_node_facts("n.json", report()));
  EXPECT_EQ(check_of(row, "python").verdict, rollout::Verdict::ok);
  EXPECT_EQ(check_of(row, "python").detail, "Python 3.11 (cp38-abi3)");
  w.python_tags = {"py3"};
  w.abi_tags = {"none"};
  w.platforms = {"any"};
  w.gpu_libraries.clear();
  w.cuda.clear();
  w.cpu_level = 0;
  row = rollout::check_node(w, rollout::parse_node_facts("n.json", report()));
  EXPECT_EQ(row.verdict, rollout::Verdict::ok);
}

TEST(RolloutCheck, NewerLibstdcxxFails) {
  auto w = gpu_wheel({image(sass, 90)});
  w.system.glibcxx = "3.4.32";
  auto row = rollout::check_node(w, rollout::parse_node_facts("n.json", report()));
  EXPECT_EQ(check_of(row, "platform").verdict, rollout::Verdict::fails);
  EXPECT_EQ(check_of(row, "platform").detail,
            "its libraries use GLIBCXX_3.4.32, the node's libstdc++ has GLIBCXX_3.4.30");
}

TEST(RolloutNodeFacts, HostileFieldsAreUnknownNeverAPass) {
  for (const char* text : {R"({"node": {"format": 1, "glibc": 2.36, "cpu_level": ["v4"], "python": {}, "driver": 7,
                                     "machine": null}, "gpus": {"devices": "many"}, "torch": []})",
                           R"({"node": "yes"})", R"([1, 2])", "\x01\x02", R"({"node": {"format": 1e300}})"}) {
    auto facts = rollout::parse_node_facts("h.json", text);
    auto row = rollout::check_node(gpu_wheel({image(sass, 90)}), facts);
    EXPECT_NE(row.verdict, rollout::Verdict::ok) << text;
  }
  auto facts = rollout::parse_node_facts("h.json", R"({"node": {"format": 2}})");
  EXPECT_EQ(facts.unreadable,
            "node.format 2 is newer than this opforge reads (1): check it with the opforge that wrote it");
}

TEST(RolloutNodeFacts, AFormatThatIsNotThePlainIntegerIsRefusedByWhatWasFound) {
  // Read as "no format" before, these rows passed: a report's format is checked, never guessed.
  const std::pair<const char*, const char*> cases[] = {
      {"2.0", "node.format 2.0 is not an integer, expected the integer 1"},
      {"1.0", "node.format 1.0 is not an integer, expected the integer 1"},
      {"\"2\"", "node.format \"2\" is a string, expected the integer 1"},
      {"\"1\"", "node.format \"1\" is a string, expected the integer 1"},
      {"9223372036854775808", "node.format 9223372036854775808 is newer than this opforge reads (1)"},
      {"-1", "node.format -1 is not a format opforge writes, expected the integer 1"},
      {"null", "node.format null is null, expected the integer 1"},
  };
  for (const auto& [format, why] : cases) {
    std::string text = report();
    const auto at = text.find("\"format\": 1");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 11, std::string("\"format\": ") + format);
    auto facts = rollout::parse_node_facts("n.json", text);
    EXPECT_TRUE(facts.unreadable.starts_with(why)) << format << ": " << facts.unreadable;
    auto row = rollout::check_node(gpu_wheel({image(sass, 90)}), facts);
    EXPECT_NE(row.verdict, rollout::Verdict::ok) << format;
  }
  std::string no_format = report();
  no_format.replace(no_format.find("\"format\": 1, "), 13, "");
  EXPECT_EQ(rollout::parse_node_facts("n.json", no_format).unreadable,
            "node.format is missing, expected the integer 1: give the output of `opforge doctor --json`");
  // The report itself, for the record: format 1 passes.
  EXPECT_EQ(rollout::check_node(gpu_wheel({image(sass, 90)}), rollout::parse_node_facts("n.json", report())).verdict,
            rollout::Verdict::ok);
}

TEST(RolloutNodeFacts, ADeepReportIsUnreadableNotACrash) {
  // 50,000 levels with a \udce9 escape, in "node" and as the whole report.
  std::string deep;
  for (int i = 0; i < 50000; ++i) deep += "[";
  deep += "\"\\udce9\"";
  for (int i = 0; i < 50000; ++i) deep += "]";
  for (const std::string& text : {deep, "{\"node\": " + deep + "}", R"({"gpus": {"devices": )" + deep + "}}"}) {
    auto nodes = rollout::parse_node_reports("n.json", text);
    ASSERT_EQ(nodes.size(), 1u);
    EXPECT_EQ(nodes[0].unreadable,
              "not JSON opforge reads: arrays and objects nested more than 256 levels deep (give the output of "
              "`opforge doctor --json`)");
    EXPECT_NE(rollout::check_node(gpu_wheel({image(sass, 90)}), nodes[0]).verdict, rollout::Verdict::ok);
  }
}

// The machine row: the wheel's platform tags against the node's `uname -m`, both ways; a report
// without the field says unknown, as other absent facts do.
TEST(RolloutCheck, MachineRowBothWaysAndAbsent) {
  auto on = [](const rollout::WheelNeeds& w, const std::string& text) {
    return check_of(rollout::check_node(w, rollout::parse_node_facts("n.json", text)), "machine");
  };
  auto grace = report();
  grace.replace(grace.find("\"x86_64\""), 8, "\"aarch64\"");
  auto x86 = on(gpu_wheel({image(sass, 90)}), grace);
  EXPECT_EQ(x86.verdict, rollout::Verdict::fails);
  EXPECT_EQ(x86.detail, "wheel is for x86_64, node is aarch64");
  auto arm_wheel = gpu_wheel({image(sass, 90)});
  arm_wheel.platforms = {"manylinux_2_34_aarch64"};
  arm_wheel.cpu_level = 0;
  auto arm = on(arm_wheel, report());
  EXPECT_EQ(arm.verdict, rollout::Verdict::fails);
  EXPECT_EQ(arm.detail, "wheel is for aarch64, node is x86_64");
  auto row = rollout::check_node(arm_wheel, rollout::parse_node_facts("n.json", grace));
  EXPECT_EQ(check_of(row, "machine").detail, "aarch64");
  EXPECT_EQ(check_of(row, "platform").detail, "glibc 2.36, libstdc++ GLIBCXX_3.4.30");
  EXPECT_EQ(check_of(row, "cpu").detail, "no x86-64 code");
  // A wheel tagged for both machines fits both; Debian's spelling of the node's machine is read.
  arm_wheel.platforms = {"manylinux_2_34_x86_64", "manylinux_2_34_aarch64"};
  EXPECT_EQ(on(arm_wheel, grace).verdict, rollout::Verdict::ok);
  auto amd64 = report();
  amd64.replace(amd64.find("\"x86_64\""), 8, "\"amd64\"");
  EXPECT_EQ(on(gpu_wheel({image(sass, 90)}), amd64).detail, "x86_64");
  // No machine in the report (an older format 1 writer): unknown, and the row is never ok.
  auto none = report();
  none.replace(none.find("\"machine\": \"x86_64\", "), 21, "");
  auto unknown = on(gpu_wheel({image(sass, 90)}), none);
  EXPECT_EQ(unknown.verdict, rollout::Verdict::unknown);
  EXPECT_EQ(unknown.detail, "node.machine is missing or not a string");
  // The platform row still reads glibc when the machine is not known.
  auto nrow = rollout::check_node(gpu_wheel({image(sass, 90)}), rollout::parse_node_facts("n.json", none));
  EXPECT_EQ(check_of(nrow, "platform").verdict, rollout::Verdict::ok);
  EXPECT_EQ(nrow.verdict, rollout::Verdict::unknown);
  // A pure wheel runs on any machine.
  auto pure = gpu_wheel({});
  pure.platforms = {"any"};
  EXPECT_EQ(on(pure, grace).verdict, rollout::Verdict::ok);
}
