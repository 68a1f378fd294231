#include <gtest/gtest.h>

#include <elf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "util/strings.h"
#include "wheel/wheel.h"
#include "wheel_test_util.h"

namespace opforge::wheel {
namespace {

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

TEST(WheelElf, PlainCLibraryIsManylinuxFromItsGlibcVersions) {
  // memcpy@GLIBC_2.14 and a stack protector reference make the version set non-trivial.
  auto so = testing::build_so("glibc", R"(
#include <string.h>
#include <stdio.h>
__attribute__((visibility("default"))) int opforge_t_copy(char* d, const char* s, unsigned long n) {
  memcpy(d, s, n); return snprintf(d, n, "%s", s); }
)");
  ASSERT_FALSE(so.empty());
  auto info = read_elf(so);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_TRUE(has(info->needed, "libc.so.6"));
  ASSERT_TRUE(info->version_needs.contains("libc.so.6"));
  EXPECT_TRUE(has(info->version_needs.at("libc.so.6"), "GLIBC_2.14"));
  EXPECT_TRUE(info->has_symtab);
  EXPECT_TRUE(info->fatbin.empty());
  auto d = platform_tag({{"opforge_ops/_lib/a.so", *info}});
  ASSERT_TRUE(d.glibc_minor);
  EXPECT_GE(*d.glibc_minor, 14);
  // GLIBC_2.14 needed → the oldest defined policy that covers it.
  EXPECT_EQ(d.platform, *d.glibc_minor == 14 ? "manylinux_2_17_x86_64"
                                             : "manylinux_2_" + std::to_string(*d.glibc_minor) + "_x86_64");
  EXPECT_TRUE(d.reasons.empty());
}

TEST(WheelElf, OpenMpLibraryIsPlainLinuxWithReason) {
  auto so = testing::build_so("omp", R"(
__attribute__((visibility("default"))) void opforge_t_scale(float* x, int n) {
#pragma omp parallel for
  for (int i = 0; i < n; ++i) x[i] *= 2; }
)",
                              "-fopenmp");
  ASSERT_FALSE(so.empty());
  auto info = read_elf(so);
  ASSERT_TRUE(info);
  EXPECT_TRUE(has(info->needed, "libgomp.so.1"));
  auto d = platform_tag({{"opforge_ops/_lib/libopforge_t.so", *info}});
  EXPECT_EQ(d.platform, "linux_x86_64");
  ASSERT_EQ(d.reasons.size(), 1u);
  EXPECT_EQ(d.reasons[0], "opforge_ops/_lib/libopforge_t.so needs libgomp.so.1, which is not on any manylinux policy");
}

TEST(WheelElf, LinkingLibcudaIsRefused) {
  ElfInfo info;
  info.needed = {"libcuda.so.1", "libc.so.6"};
  info.version_needs["libc.so.6"] = {"GLIBC_2.2.5"};
  auto d = platform_tag({{"x.so", info}});
  EXPECT_EQ(d.platform, "linux_x86_64");
  ASSERT_EQ(d.reasons.size(), 1u);
  EXPECT_EQ(d.reasons[0],
            "x.so links libcuda.so.1, which must be opened with dlopen (the driver "
            "is not on any manylinux policy)");
}

TEST(WheelElf, NewLibstdcxxRaisesTheGlibcFloor) {
  ElfInfo info;
  info.needed = {"libstdc++.so.6", "libc.so.6"};
  info.version_needs["libc.so.6"] = {"GLIBC_2.17"};
  info.version_needs["libstdc++.so.6"] = {"GLIBCXX_3.4.30", "CXXABI_1.3.9"};
  EXPECT_EQ(platform_tag({{"x.so", info}}).platform, "manylinux_2_35_x86_64");
  info.version_needs["libstdc++.so.6"] = {"GLIBCXX_3.4.99"};
  auto d = platform_tag({{"x.so", info}});
  EXPECT_EQ(d.platform, "linux_x86_64");
  EXPECT_EQ(d.reasons.at(0), "x.so needs GLIBCXX_3.4.99, newer than any manylinux policy allows");
}

TEST(WheelElf, TagNamesADefinedPolicy) {
  ElfInfo info;
  info.needed = {"libc.so.6"};
  info.version_needs["libc.so.6"] = {"GLIBC_2.2.5", "GLIBC_2.32"};
  EXPECT_EQ(platform_tag({{"x.so", info}}).platform, "manylinux_2_34_x86_64");
  info.version_needs["libc.so.6"] = {"GLIBC_2.34"};
  EXPECT_EQ(platform_tag({{"x.so", info}}).platform, "manylinux_2_34_x86_64");
  info.version_needs["libc.so.6"] = {"GLIBC_2.45"};
  EXPECT_EQ(platform_tag({{"x.so", info}}).platform, "manylinux_2_45_x86_64");
}

TEST(WheelElf, NoElfIsAnyWithReason) {
  auto d = platform_tag({});
  EXPECT_EQ(d.platform, "any");
  EXPECT_EQ(d.reasons, std::vector<std::string>{"the wheel holds no ELF file"});
}

TEST(WheelElf, NotElf) {
  auto r = read_elf("#!/bin/sh\n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
}

// Found by the elf fuzzer: a .gnu.version_r entry whose next-entry offset points far past the
// section made the reader's int offsets overflow (undefined behaviour). The read stops at that
// entry and keeps what came before it.
TEST(WheelElf, VersionNeedsPointingOutOfTheirSectionEndTheList) {
  auto so = testing::build_so("verneed", R"(
#include <string.h>
#include <stdio.h>
__attribute__((visibility("default"))) int opforge_t_copy(char* d, const char* s, unsigned long n) {
  memcpy(d, s, n); return snprintf(d, n, "%s", s); }
)");
  ASSERT_GE(so.size(), sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, so.data(), sizeof eh);
  std::size_t verneed = 0;
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, so.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
    if (sh.sh_type == SHT_GNU_verneed) verneed = sh.sh_offset;
  }
  ASSERT_NE(verneed, 0u);
  Elf64_Verneed need;
  std::memcpy(&need, so.data() + verneed, sizeof need);
  ASSERT_GE(need.vn_cnt, 2) << "libc.so.6's entry names two versions (GLIBC_2.14 and GLIBC_2.2.5)";
  // The first version's link to the second, and the link to the next library, past any section.
  Elf64_Vernaux aux;
  std::memcpy(&aux, so.data() + verneed + need.vn_aux, sizeof aux);
  aux.vna_next = 0x7fffffff;
  std::memcpy(so.data() + verneed + need.vn_aux, &aux, sizeof aux);
  need.vn_next = 0xfffffff0;
  std::memcpy(so.data() + verneed, &need, sizeof need);
  auto info = read_elf(so);
  ASSERT_TRUE(info) << info.error().message;
  ASSERT_EQ(info->version_needs.size(), 1u);
  EXPECT_EQ(info->version_needs.begin()->second.size(), 1u);  // the first version only
}

TEST(WheelFatbin, RejectsBadMagicAndOverrun) {
  std::string junk(32, '\x11');
  auto r = parse_fatbin(junk);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "fatbinary at offset 0 has magic 0x11111111, expected 0xba55ed50");
  std::string hdr("\x50\xed\x55\xba\x01\x00\x10\x00\xff\x00\x00\x00\x00\x00\x00\x00", 16);
  r = parse_fatbin(hdr);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "fatbinary at offset 0 overruns its section");
}

// Real nvcc: two SASS images and one PTX image.
TEST(WheelFatbin, FindsEachArchitectureInAnNvccLibrary) {
  const std::string nvcc = "/usr/local/cuda-13.0/bin/nvcc";
  if (!std::filesystem::exists(nvcc)) GTEST_SKIP() << "nvcc is not available at " << nvcc;
  auto dir = testing::temp_dir("nvcc");
  ASSERT_TRUE(testing::build_nvcc_library(nvcc, dir));
  auto info = read_elf(testing::slurp(dir / "k.so"));
  ASSERT_TRUE(info) << info.error().message;
  std::vector<std::string> names;
  for (const auto& img : info->fatbin) names.push_back(img.name());
  EXPECT_TRUE(has(names, "sm_80")) << strings::join(names, " ");
  EXPECT_TRUE(has(names, "sm_90"));
  EXPECT_TRUE(has(names, "compute_90"));
  EXPECT_FALSE(has(names, "compute_80"));
  EXPECT_FALSE(has(info->needed, "libcuda.so.1"));
  std::filesystem::remove_all(dir);
}

// What a library needs of torch, from its undefined symbols: torch's C++ namespaces (the C++ ABI,
// one torch release), only the stable C shim (that release or a newer one), or nothing.
TEST(WheelTorchLinkage, ClassifiesBySymbols) {
  ElfInfo cxx;
  cxx.unversioned_undefined = {"PyModule_Create2", "_ZN2at4_ops10empty_like4callERKNS_6TensorE",
                               "_ZNK3c1010TensorImpl4sizeEl", "aoti_torch_get_device_type"};
  auto l = torch_linkage(cxx);
  EXPECT_EQ(l.abi, TorchAbi::cxx);
  EXPECT_EQ(l.evidence, (std::vector<std::string>{"at::_ops::empty_like::call(...)", "c10::TensorImpl::size(...)"}));
  ElfInfo stable;
  stable.unversioned_undefined = {"aoti_torch_empty_strided", "aoti_torch_get_device_type", "memcpy",
                                  "torch_call_dispatcher"};
  l = torch_linkage(stable);
  EXPECT_EQ(l.abi, TorchAbi::stable);
  EXPECT_EQ(l.evidence, (std::vector<std::string>{"aoti_torch_empty_strided", "aoti_torch_get_device_type",
                                                  "torch_call_dispatcher"}));
  ElfInfo none;  // names that only look like torch's: a namespace "data::at", a class "attach", std::
  none.unversioned_undefined = {"_ZN4data2at3fooEv", "_ZN6attach3fooEv", "_ZNSt6vectorIiSaIiEE9push_backERKi",
                                "PyModule_Create2"};
  EXPECT_EQ(torch_linkage(none).abi, TorchAbi::none);
  EXPECT_EQ(torch_abi_name(TorchAbi::cxx), "C++ ABI");
  EXPECT_EQ(torch_abi_name(TorchAbi::stable), "stable C ABI");
}

// The same from real libraries made by g++: read_elf lists the undefined symbols no version binds
// (torch's libraries version none), and a library of the stable shim alone is not taken for C++.
TEST(WheelTorchLinkage, ReadsRealLibraries) {
  auto dir = testing::temp_dir("torchlink");
  testing::spit(dir / "cxx.cpp",
                "namespace at { struct Tensor { long dim() const; }; }\n"
                "long rank(const at::Tensor& t) { return t.dim(); }\n");
  testing::spit(dir / "stable.c",
                "int aoti_torch_get_device_type(void*, int*);\n"
                "int device(void* t) { int d = 0; aoti_torch_get_device_type(t, &d); return d; }\n");
  testing::spit(dir / "plain.c", "#include <string.h>\nvoid copy(char* a, const char* b) { strcpy(a, b); }\n");
  for (auto [src, cc] : {std::pair{"cxx.cpp", "g++"}, {"stable.c", "gcc"}, {"plain.c", "gcc"}}) {
    const std::string cmd = std::string(cc) + " -shared -fPIC -o " + (dir / (std::string(src) + ".so")).string() + " " +
                            (dir / src).string();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  auto abi = [&](const char* lib) {
    auto info = read_elf(testing::slurp(dir / lib));
    return info ? torch_linkage(*info).abi : TorchAbi::none;
  };
  EXPECT_EQ(abi("cxx.cpp.so"), TorchAbi::cxx);
  EXPECT_EQ(abi("stable.c.so"), TorchAbi::stable);
  EXPECT_EQ(abi("plain.c.so"), TorchAbi::none);
  auto info = read_elf(testing::slurp(dir / "plain.c.so"));
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->version_symbols.contains("GLIBC_2.2.5"));  // strcpy: versioned, not among the unversioned
  std::filesystem::remove_all(dir);
}

// Real nvcc: arch-specific (sm_90a) and family (sm_100f) code is named so: it runs on that GPU, or
// that family, alone.
TEST(WheelFatbin, NamesArchSpecificAndFamilyCode) {
  const std::string nvcc = "/usr/local/cuda-13.0/bin/nvcc";
  if (!std::filesystem::exists(nvcc)) GTEST_SKIP() << "nvcc is not available at " << nvcc;
  auto dir = testing::temp_dir("nvcc90a");
  ASSERT_TRUE(testing::build_nvcc_library(
      nvcc, dir, "-gencode arch=compute_90a,code=[sm_90a,compute_90a] -gencode arch=compute_100f,code=sm_100f"));
  auto info = read_elf(testing::slurp(dir / "k.so"));
  ASSERT_TRUE(info) << info.error().message;
  std::vector<std::string> names;
  for (const auto& img : info->fatbin) names.push_back(img.name());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());  // -shared links a second copy in
  EXPECT_EQ(strings::join(names, " "), "compute_90a sm_100f sm_90a");
  std::filesystem::remove_all(dir);
}

}  // namespace opforge::wheel

namespace opforge::wheel {
namespace {

/// parse_fatbin's answer in the words both readers share: the known images ("sm_80 compute_90")
/// in file order, or "error: <message>".
std::string cpp_answer(std::string_view section) {
  auto r = parse_fatbin(section);
  if (!r) return "error: " + r.error().message;
  std::vector<std::string> names;
  for (const auto& img : *r)
    if (img.kind != FatbinImage::Kind::unknown) names.push_back(img.name());
  return strings::join(names, " ");
}

// The C++ reader (opforge inspect, the build's GPU-code line) and its Python twin (the node check
// on a cluster) give the same answer for a real nvcc section and for every way it can be cut or
// damaged: each truncation, a short trailing entry, a bad header size, an overrunning payload, an
// unknown kind.
TEST(WheelFatbin, TheCppAndPythonReadersAgree) {
  const std::string nvcc = "/usr/local/cuda-13.0/bin/nvcc";
  if (!std::filesystem::exists(nvcc)) GTEST_SKIP() << "nvcc is not available at " << nvcc;
  auto dir = testing::temp_dir("fatbin-diff");
  ASSERT_TRUE(testing::build_nvcc_library(nvcc, dir));
  const std::string dump = "objcopy --dump-section .nv_fatbin=" + (dir / "real.bin").string() + " " +
                           (dir / "k.so").string() + " " + (dir / "k-copy.so").string();
  ASSERT_EQ(std::system(dump.c_str()), 0);
  const std::string real = testing::slurp(dir / "real.bin");
  ASSERT_GT(real.size(), 200u);

  std::vector<std::string> cases = {real, ""};
  for (std::size_t n : {8, 15, 16, 17, 31, 32, 47, 48, 63, 64, 80, 96, 100, 127, 128})
    if (n < real.size()) cases.push_back(real.substr(0, n));
  for (std::size_t n = 128; n < real.size(); n += real.size() / 7) cases.push_back(real.substr(0, n));
  auto poke32 = [](std::string s, std::size_t at, std::uint32_t v) {
    if (at + 4 <= s.size()) std::memcpy(s.data() + at, &v, 4);
    return s;
  };
  auto poke64 = [](std::string s, std::size_t at, std::uint64_t v) {
    if (at + 8 <= s.size()) std::memcpy(s.data() + at, &v, 8);
    return s;
  };
  // The first entry starts after the 16-byte fatbinary header.
  cases.push_back(poke32(real, 16 + 4, 16));          // header size below 32
  cases.push_back(poke32(real, 16 + 4, 0x7fffffff));  // header size past the end
  cases.push_back(poke64(real, 16 + 8, 1ull << 40));  // payload past the end
  cases.push_back(poke32(real, 16, 7));               // unknown kind, version 0
  cases.push_back(poke32(real, 0, 0x11111111));       // bad magic
  {
    // A fatbinary whose entries region ends with 16..31 stray bytes: fewer than a header.
    std::string h("\x50\xed\x55\xba\x01\x00\x10\x00", 8);
    for (std::uint64_t stray : {16u, 24u, 31u}) {
      std::string s = h + std::string(8, '\0') + std::string(stray, '\x02');
      cases.push_back(poke64(s, 8, stray));
    }
  }
  std::string list;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    auto file = dir / ("case" + std::to_string(i) + ".bin");
    testing::spit(file, cases[i]);
    list += file.string() + "\n";
  }
  testing::spit(dir / "list.txt", list);
  const std::string py = std::string(OPFORGE_SOURCE_DIR) + "/src/python/opforge_ops/nodecheck/fatbin.py";
  testing::spit(dir / "answer.py",
                "import importlib.util, sys\n"
                "spec = importlib.util.spec_from_file_location('fatbin', sys.argv[1])\n"
                "m = importlib.util.module_from_spec(spec)\n"
                "spec.loader.exec_module(m)\n"
                "for path in open(sys.argv[2]).read().split():\n"
                "    try:\n"
                "        print(' '.join(i.name for i in m.parse_fatbin(open(path, 'rb').read())))\n"
                "    except m.FatbinError as e:\n"
                "        print('error: ' + str(e))\n");
  const std::string run = "python3 " + (dir / "answer.py").string() + " " + py + " " + (dir / "list.txt").string() +
                          " > " + (dir / "python.txt").string();
  ASSERT_EQ(std::system(run.c_str()), 0);
  auto python = strings::split(testing::slurp(dir / "python.txt"), '\n');
  ASSERT_GE(python.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i)
    EXPECT_EQ(cpp_answer(cases[i]), python[i]) << "case " << i << " (" << cases[i].size() << " bytes)";
  EXPECT_EQ(cpp_answer(real).find("error"), std::string::npos) << cpp_answer(real);
}

}  // namespace
}  // namespace opforge::wheel
