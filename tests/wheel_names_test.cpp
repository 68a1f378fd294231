#include <gtest/gtest.h>

#include "wheel/wheel.h"

namespace opforge::wheel {

TEST(WheelNames, NormalizeCollapsesSeparatorRunsAndLowercases) {
  EXPECT_EQ(normalize_name("opforge-ops"), "opforge_ops");
  EXPECT_EQ(normalize_name("My.__Package--X"), "my_package_x");
  EXPECT_EQ(normalize_name("a_b"), "a_b");
}

TEST(WheelNames, ValidVersions) {
  for (const char* v : {"0.1.0", "1", "0.1.0+cu13.g8cd046f", "2.0rc1", "1.0.post2.dev3", "0.1.0+cpu", "1.2a3+abc.1"})
    EXPECT_TRUE(validate_version(v).has_value()) << v;
}

TEST(WheelNames, InvalidVersionsSayWhy) {
  auto e = validate_version("0.1.0+CU13");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(e.error().message,
            "invalid version '0.1.0+CU13': local label 'CU13' may only hold a-z, 0-9 and '.', not 'C'");
  EXPECT_FALSE(validate_version("0.1.0+cu13..g1"));
  EXPECT_FALSE(validate_version("0.1.0+"));
  EXPECT_FALSE(validate_version("0.1.0+cu-13"));
  EXPECT_FALSE(validate_version("v0.1"));
  EXPECT_FALSE(validate_version("0.1-1"));
  EXPECT_FALSE(validate_version(""));
}

TEST(WheelBuildInfo, SortedDictWithVersionsOnly) {
  BuildInfo info;
  info.opforge_version = "0.1.0";
  info.package_version = "0.1.0+cu13.gabc1234";
  info.toolkit_version = "13.0";
  info.host_compiler = "gcc 12.2.0";
  info.arch_list = {"8.0", "9.0+PTX"};
  info.ops = {"cpu_adam", "overflow"};
  info.op_kinds = {{"cpu_adam", "cpu"}, {"overflow", "cuda"}};
  info.source_commit = "abc1234def";
  info.notes = {{"cpu_adam", {"simd: runtime dispatch (avx2, avx512)"}}};
  info.build_vars = {{"cpu_adam", "DS_BUILD_CPU_ADAM"}, {"overflow", "DS_BUILD_OVERFLOW"}};
  auto text = build_info_py(info);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text,
            "# Written by opforge build: how this wheel was built (versions only, no paths).\n"
            "BUILD_INFO = {\n"
            "    'arch_list': ['8.0', '9.0+PTX'],\n"
            "    'build_vars': {'cpu_adam': 'DS_BUILD_CPU_ADAM', 'overflow': 'DS_BUILD_OVERFLOW'},\n"
            "    'host_compiler': 'gcc 12.2.0',\n"
            "    'notes': {'cpu_adam': ['simd: runtime dispatch (avx2, avx512)']},\n"
            "    'op_kinds': {'cpu_adam': 'cpu', 'overflow': 'cuda'},\n"
            "    'ops': ['cpu_adam', 'overflow'],\n"
            "    'opforge_version': '0.1.0',\n"
            "    'source_checkout': False,\n"
            "    'source_commit': 'abc1234def',\n"
            "    'toolkit_version': '13.0',\n"
            "    'version': '0.1.0+cu13.gabc1234',\n"
            "}\n");
  info.host_compiler = "/usr/bin/gcc";
  auto bad = build_info_py(info);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "build_info host_compiler '/usr/bin/gcc' is an absolute path");
}

}  // namespace opforge::wheel

#include "probe/fake_machine.h"

namespace opforge::wheel {

TEST(WheelCollect, WalksSortedSkipsBytecodeKeepsModes) {
  probe::FakeFileSystem fs;
  fs.add_file("/stage/opforge_ops/__init__.py", "A");
  fs.add_file("/stage/opforge_ops/__pycache__/__init__.cpython-311.pyc", "junk");
  fs.add_file("/stage/opforge_ops/stray.pyc", "junk");
  fs.add_file("/stage/opforge_ops/_lib/libopforge_x.so", "ELF", 0755);
  fs.add_file("/stage/opforge_ops/overflow/__init__.py", "B");
  auto files = collect_files(fs, "/stage/opforge_ops", "opforge_ops");
  ASSERT_TRUE(files) << files.error().message;
  ASSERT_EQ(files->size(), 3u);
  EXPECT_EQ((*files)[0].path, "opforge_ops/__init__.py");
  EXPECT_EQ((*files)[0].mode, 0644u);
  EXPECT_EQ((*files)[1].path, "opforge_ops/_lib/libopforge_x.so");
  EXPECT_EQ((*files)[1].mode, 0755u);
  EXPECT_EQ((*files)[2].path, "opforge_ops/overflow/__init__.py");
  EXPECT_EQ((*files)[2].content, "B");
}

// One parser of wheel file names (PEP 427) for verify, the index, provisioning and the build's
// summary; one PEP 503 folding.
TEST(WheelNames, FileNamesAndProjectNames) {
  auto p = parse_wheel_filename("nvidia_cuda_nvcc-13.2.86-py3-none-manylinux_2_27_x86_64.whl");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->name, "nvidia_cuda_nvcc");
  EXPECT_EQ(p->version, "13.2.86");
  EXPECT_EQ(p->build, "");
  EXPECT_EQ(p->tags(), "py3-none-manylinux_2_27_x86_64");
  EXPECT_EQ(project_name(p->name), "nvidia-cuda-nvcc");
  auto b = parse_wheel_filename("opforge_ops-0.1.0+cu13-1-cp38-abi3-manylinux_2_31_x86_64.whl");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->build, "1");
  EXPECT_EQ(b->abi, "abi3");
  EXPECT_EQ(b->platform, "manylinux_2_31_x86_64");
  for (auto bad : {"a-1-py3-none.whl", "a-1-py3-none-any.zip", "a-1-2-3-py3-none-any.whl", "a--py3-none-any.whl",
                   "d/a-1-py3-none-any.whl", ""})
    EXPECT_FALSE(parse_wheel_filename(bad)) << bad;
  EXPECT_EQ(project_name("Opforge__Ops.x"), "opforge-ops-x");
  EXPECT_EQ(normalize_name("Opforge__Ops.x"), "opforge_ops_x");
}

}  // namespace opforge::wheel
