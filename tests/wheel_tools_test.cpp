#include <gtest/gtest.h>

#include <cstdlib>

#include "wheel/wheel.h"
#include "wheel_test_util.h"

namespace opforge::wheel {

// A wheel written by opforge's writer from a gcc-built op library and the real opforge_ops
// package goes through the ecosystem's checkers (tests/wheel_tools/check_wheel.sh). The default
// wheel gets the same treatment in tests/wheel_tools.cmake (the default_wheel fixture).
class WheelTools : public ::testing::TestWithParam<const char*> {};

TEST_P(WheelTools, HandBuiltWheelPassesTheEcosystemCheckers) {
  const std::string flavour = GetParam();  // "plain": manylinux, "openmp": linux_x86_64
  const std::filesystem::path source = OPFORGE_SOURCE_DIR;
  const auto tools = source / ".venv-tools";
  if (!std::filesystem::exists(tools / "bin" / "auditwheel"))
    OPFORGE_SKIP_UNLESS_CI(tools.string() + " has no auditwheel: run scripts/deps");
  auto so = testing::build_so("tools-" + flavour,
                              "#include <string.h>\n"
                              "__attribute__((visibility(\"default\"))) int opforge_demo_abi_version(void) "
                              "{ return 1; }\n"
                              "__attribute__((visibility(\"default\"))) void opforge_demo_copy(char* d, const char* s,"
                              " unsigned long n) { memcpy(d, s, n);\n#pragma omp parallel for\n"
                              " for (int i = 0; i < 4; ++i) d[i] += 1; }\n",
                              std::string("-Wl,--build-id=none -s") + (flavour == "openmp" ? " -fopenmp" : ""));
  ASSERT_FALSE(so.empty());
  Spec s;
  s.name = "opforge-ops";
  s.version = "0.1.0+cpu.gabc1234";
  s.summary = "Prebuilt ops (test wheel)";
  s.description = "# opforge-ops\n\nA test wheel written by the wheel tests.\n";
  s.source_date_epoch = 1700000000;
  for (const char* py : {"__init__.py", "_native.py"})
    s.files.push_back({std::string("opforge_ops/") + py, testing::slurp(source / "src/python/opforge_ops" / py), 0644});
  BuildInfo info;
  info.opforge_version = "0.1.0";
  info.package_version = s.version;
  info.host_compiler = "gcc 12";
  info.ops = {"demo"};
  info.op_kinds = {{"demo", "cpu"}};
  s.files.push_back({"opforge_ops/build_info.py", *build_info_py(info), 0644});
  s.files.push_back({"opforge_ops/_lib/libopforge_demo.so", so, 0755});
  auto dir = std::filesystem::path(OPFORGE_BUILD_DIR) / "wheel_tools" / flavour;
  std::filesystem::remove_all(dir);
  auto m = probe::real_machine();
  auto w = write(m.fs, s, dir / "dist");
  ASSERT_TRUE(w) << w.error().message;
  std::string cmd = (source / "tests/wheel_tools/check_wheel.sh").string() + " '" + w->path.string() + "' " +
                    tools.string() + " " + (dir / "work").string() + " > " + (dir / "log.txt").string() + " 2>&1";
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << testing::slurp(dir / "log.txt");
  EXPECT_EQ(w->packed.platform.platform.starts_with("manylinux_2_"), flavour == "plain");
}

INSTANTIATE_TEST_SUITE_P(Flavours, WheelTools, ::testing::Values("plain", "openmp"));

}  // namespace opforge::wheel
