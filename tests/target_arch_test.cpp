// GPU architectures and the TORCH_CUDA_ARCH_LIST syntax: spelling, parsing, errors.
#include "target/arch.h"

#include <gtest/gtest.h>

namespace opforge::target {
namespace {

std::string joined(const std::vector<Arch>& v) { return arch_list_str(v); }

TEST(TargetArch, StrSmGencode) {
  Arch a{9, 0, 'a', true};
  EXPECT_EQ(a.str(), "9.0a+PTX");
  EXPECT_EQ(a.sm(), "90a");
  EXPECT_EQ(a.gencode(), (std::vector<std::string>{"-gencode=arch=compute_90a,code=sm_90a",
                                                   "-gencode=arch=compute_90a,code=compute_90a"}));
  EXPECT_EQ((Arch{8, 6}).gencode(), (std::vector<std::string>{"-gencode=arch=compute_86,code=sm_86"}));
  EXPECT_EQ((Arch{12, 0}).sm(), "120");
}

TEST(TargetArchList, PyTorchSyntax) {
  EXPECT_EQ(joined(*parse_arch_list("8.0;9.0+PTX")), "8.0;9.0+PTX");
  EXPECT_EQ(joined(*parse_arch_list("6.1 8.6")), "6.1;8.6");
  EXPECT_EQ(joined(*parse_arch_list("9.0a;10.0f")), "9.0a;10.0f");
  EXPECT_EQ(joined(*parse_arch_list("Ampere;Hopper")), "8.0;8.6+PTX;9.0+PTX");
  EXPECT_EQ(joined(*parse_arch_list("Ampere+Tegra")), "8.7");
  EXPECT_EQ(joined(*parse_arch_list("Blackwell")), "10.0;10.3;12.0;12.1+PTX");
}

TEST(TargetArchList, ErrorsPointAtTheEntry) {
  auto r = parse_arch_list("8.0;86;9.0");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(r.error().message, "invalid architecture '86' in the arch list");
  EXPECT_EQ(r.error().where.column, 5);
  auto n = parse_arch_list("8.0;Amper");
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().where.column, 5);
  EXPECT_TRUE(n.error().hint.starts_with("did you mean 'Ampere'?")) << n.error().hint;
  auto e = parse_arch_list("8.6;;");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().message, "empty entry in the arch list");
  EXPECT_EQ(e.error().where.column, 5);
  EXPECT_FALSE(parse_arch_list("   "));
  EXPECT_FALSE(parse_arch_list("8.0+ptx"));
}

// CMake's spelling: SASS of each entry ("-real"), PTX only where the list says +PTX ("-virtual").
TEST(TargetArchList, CmakeArchitectures) {
  auto list = [](std::string_view text) { return cmake_architectures(parse_arch_list(text).value()); };
  EXPECT_EQ(list("8.0;8.6;9.0+PTX"), "80-real;86-real;90-real;90-virtual");
  EXPECT_EQ(list("9.0a"), "90a-real");
  EXPECT_EQ(list("9.0"), "90-real");
  EXPECT_EQ(list("9.0a+PTX;10.0f"), "90a-real;90a-virtual;100f-real");
  EXPECT_EQ(list("Ampere"), "80-real;86-real;86-virtual");
  EXPECT_EQ(cmake_architectures({}), "");
}

// The spellings projects read: TORCH_CUDA_ARCH_LIST's, CMake's, bare numbers (bitsandbytes'
// COMPUTE_CAPABILITY, TransformerEngine's NVTE_CUDA_ARCHS), flashinfer's dotted one.
TEST(TargetArchList, Forms) {
  auto spell = [](std::string_view form, std::string_view text) {
    return find_arch_form(form)->spell(parse_arch_list(text).value());
  };
  EXPECT_EQ(spell("torch", "8.0;9.0a+PTX"), "8.0;9.0a+PTX");
  EXPECT_EQ(spell("cmake", "8.0;9.0a+PTX"), "80-real;90a-real;90a-virtual");
  EXPECT_EQ(spell("numbers", "8.0;9.0a+PTX"), "80;90a");
  EXPECT_EQ(spell("numbers", "9.0"), "90");
  EXPECT_EQ(spell("dotted", "8.0;9.0a+PTX;10.0f"), "8.0 9.0a 10.0f");
  EXPECT_EQ(spell("dotted", "9.0"), "9.0");
  EXPECT_EQ(find_arch_form("cmake-nodot"), nullptr);
  EXPECT_EQ(arch_form_names(), "torch, cmake, numbers, dotted");
  // Each row's example is its spelling of 8.0;9.0a+PTX.
  for (const auto& f : arch_forms()) EXPECT_EQ(spell(f.name, "8.0;9.0a+PTX"), f.example) << f.name;
}

}  // namespace
}  // namespace opforge::target
