// The glibc floor, the platform tag of torch-linked files and the distributions a wheel runs on,
// on ELF files built here and on what `opforge inspect --json` read from the default wheel built
// on Debian 12 and inside a Debian 11 root (tests/data/glibc/).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "util/strings.h"
#include "wheel/wheel.h"
#include "wheel_test_util.h"

namespace opforge::wheel {
namespace {

/// The ELF files of a wheel as `opforge inspect --json` printed them.
std::map<std::string, ElfInfo> captured(const std::string& name) {
  auto j = nlohmann::json::parse(test_util::data("glibc/" + name));
  std::map<std::string, ElfInfo> out;
  for (const auto& f : j["files"]) {
    if (!f.contains("elf")) continue;
    ElfInfo info;
    info.needed = f["elf"]["needed"].get<std::vector<std::string>>();
    info.version_needs = f["elf"]["version_needs"].get<std::map<std::string, std::vector<std::string>>>();
    info.version_symbols = f["elf"]["version_symbols"].get<std::map<std::string, std::vector<std::string>>>();
    out.emplace(f["path"].get<std::string>(), std::move(info));
  }
  return out;
}

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(), [&](auto& l) { return l.find(text) != std::string::npos; });
}

}  // namespace

TEST(WheelFloor, ReadsWhichSymbolsNeedEachVersion) {
  auto so = testing::build_so("dlsym", R"(
#include <dlfcn.h>
#include <math.h>
__attribute__((visibility("default"))) double opforge_t_f(const char* n, double x, double y) {
  void* h = dlopen(n, RTLD_NOW); return h ? pow(x, y) + (dlsym(h, "f") != 0) : 0; }
)",
                              "-Wl,--no-as-needed -lm");  // before the source: kept though listed first
  ASSERT_FALSE(so.empty());
  auto info = read_elf(so);
  ASSERT_TRUE(info) << info.error().message;
  // Debian 12's glibc: dlopen and dlsym moved into libc at 2.34, pow's new version came with 2.29.
  ASSERT_TRUE(info->version_symbols.contains("GLIBC_2.34")) << strings::join(info->version_needs["libc.so.6"], " ");
  EXPECT_EQ(info->version_symbols["GLIBC_2.34"], (std::vector<std::string>{"dlopen", "dlsym"}));
  EXPECT_EQ(info->version_symbols["GLIBC_2.29"], std::vector<std::string>{"pow"});
  auto v = floor_violations({{"lib/x.so", *info}}, 28);
  ASSERT_EQ(v.size(), 2u) << strings::join(v, "\n");
  EXPECT_EQ(v[0], "lib/x.so: GLIBC_2.34 (dlopen, dlsym) of libc.so.6");
  EXPECT_EQ(v[1], "lib/x.so: GLIBC_2.29 (pow) of libm.so.6");
  EXPECT_TRUE(floor_violations({{"lib/x.so", *info}}, 34).empty());
}

TEST(WheelFloor, TheDefaultWheelFromDebian12BreaksA228Floor) {
  auto elfs = captured("debian12-default.json");
  ASSERT_FALSE(elfs.empty());
  EXPECT_EQ(platform_tag(elfs).platform, "manylinux_2_34_x86_64");
  auto v = floor_violations(elfs, 28);
  EXPECT_TRUE(mentions(v,
                       "opforge_ops/_lib/libopforge_aio.so: GLIBC_2.34 (dlerror, dlopen, dlsym, pthread_once), "
                       "GLIBC_2.33 (fstat, stat) of libc.so.6"))
      << strings::join(v, "\n");
  EXPECT_TRUE(mentions(v, "libopforge_cpu_adam.so: GLIBC_2.29 (pow) of libm.so.6")) << strings::join(v, "\n");
  // cudart_static's pthread_*, sem_*, shm_*, dl*: the first six named, then "..."
  EXPECT_TRUE(mentions(v, "libopforge_overflow.so: GLIBC_2.34 (dlclose, dlerror, dlmopen, dlopen, dlsym, dlvsym, ...)"))
      << strings::join(v, "\n");
  auto st = check_floor(elfs, 28);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind, ErrorKind::failed);
  EXPECT_TRUE(
      st.error().message.starts_with("the wheel breaks its glibc floor 2.28 (manylinux_2_28): it needs glibc "
                                     "2.34"))
      << st.error().message;
  EXPECT_NE(st.error().hint.find("--root DIR"), std::string::npos);
  // what it leaves out without a floor
  EXPECT_EQ(
      distributions_for(system_needs(elfs), Meets::no),
      (std::vector<std::string>{"RHEL/Rocky 8 (glibc 2.28)", "Ubuntu 20.04 (glibc 2.31)", "Debian 11 (glibc 2.31)"}));
}

TEST(WheelFloor, TheDefaultWheelFromADebian11RootKeeps231ButNot228) {
  auto elfs = captured("debian11-default.json");
  ASSERT_FALSE(elfs.empty());
  EXPECT_TRUE(floor_violations(elfs, 31).empty()) << strings::join(floor_violations(elfs, 31), "\n");
  EXPECT_EQ(platform_tag(elfs).platform, "manylinux_2_31_x86_64");
  // pow@GLIBC_2.29 alone keeps it from RHEL 8
  auto v = floor_violations(elfs, 28);
  EXPECT_EQ(v, std::vector<std::string>{"opforge_ops/_lib/libopforge_cpu_adam.so: GLIBC_2.29 (pow) of libm.so.6"});
  EXPECT_EQ(distributions_for(system_needs(elfs), Meets::no), std::vector<std::string>{"RHEL/Rocky 8 (glibc 2.28)"});
}

TEST(WheelFloor, TorchsLibrariesAreTorchsWhenTheWheelRequiresTorch) {
  // A CUDAExtension as torch's cpp_extension links it.
  ElfInfo info;
  info.needed = {"libc10.so",       "libtorch.so",    "libtorch_cpu.so", "libtorch_python.so",
                 "libcudart.so.13", "libstdc++.so.6", "libgcc_s.so.1",   "libc.so.6"};
  info.version_needs["libc.so.6"] = {"GLIBC_2.2.5", "GLIBC_2.14", "GLIBC_2.17"};
  info.version_needs["libstdc++.so.6"] = {"GLIBCXX_3.4.21", "CXXABI_1.3.9"};
  info.version_needs["libcudart.so.13"] = {"libcudart.so.13"};
  const std::map<std::string, ElfInfo> elfs = {{"ext/_C.so", info}};
  auto alone = platform_tag(elfs);
  EXPECT_EQ(alone.platform, "linux_x86_64");
  EXPECT_TRUE(mentions(alone.reasons, "ext/_C.so needs libtorch.so, which is not on any manylinux policy"));
  auto with_torch = platform_tag(elfs, {"torch"});
  EXPECT_EQ(with_torch.platform, "manylinux_2_24_x86_64");
  EXPECT_TRUE(with_torch.reasons.empty());
  EXPECT_TRUE(mentions(with_torch.provided,
                       "ext/_C.so links libcudart.so.13, which torch (a requirement of the wheel) provides"));
  EXPECT_TRUE(floor_violations(elfs, 28, {"torch"}).empty());
  EXPECT_FALSE(floor_violations(elfs, 28).empty());
  // Another library is still refused.
  info.needed.push_back("libgomp.so.1");
  EXPECT_EQ(platform_tag({{"ext/_C.so", info}}, {"torch"}).platform, "linux_x86_64");
}

TEST(WheelFloor, RequirementsComeFromMetadata) {
  EXPECT_EQ(required_names("Metadata-Version: 2.1\nName: x\nRequires-Dist: torch==2.15.*\nRequires-Dist: "
                           "Numpy>=1\nRequires-Dist: pytest; extra == \"test\"\n\nbody\n"),
            (std::vector<std::string>{"torch", "numpy"}));
}

TEST(WheelFloor, FloorsAreManylinuxPolicies) {
  EXPECT_EQ(*parse_glibc_floor("2.28"), 28);
  EXPECT_EQ(*parse_glibc_floor("manylinux_2_31"), 31);
  EXPECT_EQ(*parse_glibc_floor(" 2.17 "), 17);
  auto bad = parse_glibc_floor("2.30");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(bad.error().message, "glibc floor '2.30' names no manylinux policy");
  EXPECT_NE(bad.error().hint.find("2.28, 2.31, 2.34"), std::string::npos) << bad.error().hint;
  EXPECT_FALSE(parse_glibc_floor("manylinux2014"));
}

TEST(WheelFloor, DistributionsFollowGlibcAndLibstdcxx) {
  SystemNeeds n;
  n.glibc_minor = 28;
  EXPECT_EQ(distributions_for(n, Meets::no), std::vector<std::string>{});
  n.glibcxx = "3.4.29";  // gcc 11's libstdc++: not RHEL 8's, Debian 11's or Ubuntu 20.04's
  EXPECT_EQ(distributions_for(n), (std::vector<std::string>{"RHEL 9 (glibc 2.34)", "Ubuntu 22.04 (glibc 2.35)",
                                                            "Debian 12 (glibc 2.36)", "Ubuntu 24.04 (glibc 2.39)"}));
  EXPECT_EQ(n.str(), "glibc 2.28, libstdc++ GLIBCXX_3.4.29");
  ASSERT_GE(distributions().size(), 6u);
  EXPECT_EQ(distributions().front().name, "RHEL/Rocky 8");
}

TEST(WheelFloor, NonNumericVersionsNeedTheirPolicy) {
  ElfInfo info;
  info.needed = {"libc.so.6"};
  info.version_needs["libc.so.6"] = {"GLIBC_2.17", "GLIBC_ABI_DT_RELR"};
  EXPECT_EQ(platform_tag({{"x.so", info}}).platform, "manylinux_2_36_x86_64");
  EXPECT_EQ(floor_violations({{"x.so", info}}, 34), std::vector<std::string>{"x.so: GLIBC_ABI_DT_RELR of libc.so.6"});
}

}  // namespace opforge::wheel
