#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "wheel/wheel.h"
#include "wheel_test_util.h"

namespace opforge::wheel {
namespace {

std::string run(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *rc = pclose(p);
  return out;
}

}  // namespace

// Real nvcc library in a wheel, then the real opforge binary.
TEST(WheelInspect, CliReportsArchitecturesAndGlibcVersions) {
  const std::string nvcc = "/usr/local/cuda-13.0/bin/nvcc";
  if (!std::filesystem::exists(nvcc)) GTEST_SKIP() << "nvcc is not available at " << nvcc;
  auto dir = testing::temp_dir("inspect");
  ASSERT_TRUE(testing::build_nvcc_library(nvcc, dir));
  Spec s;
  s.name = "opforge-ops";
  s.version = "0.1.0+cu13";
  s.files = {{"opforge_ops/_lib/libopforge_k.so", testing::slurp(dir / "k.so"), 0755}};
  auto m = probe::real_machine();
  auto w = write(m.fs, s, dir);
  ASSERT_TRUE(w) << w.error().message;

  int rc = 0;
  auto out = run(std::string(OPFORGE_BINARY) + " inspect --json " + w->path.string(), &rc);
  ASSERT_EQ(rc, 0) << out;
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["version"], "0.1.0+cu13");
  EXPECT_TRUE(j["valid"].get<bool>());
  EXPECT_EQ(j["tags"][0], "py3-none-" + j["computed_platform"].get<std::string>());
  const auto& elf = j["files"][0]["elf"];
  std::set<std::string> names;
  for (const auto& img : elf["fatbin"]) names.insert(img["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"sm_80", "sm_90", "compute_90"}));
  EXPECT_TRUE(elf["version_needs"].contains("libc.so.6"));

  auto textual = run(std::string(OPFORGE_BINARY) + " inspect " + w->path.string(), &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_NE(textual.find("gpu code: sm_80 sm_90  ptx: compute_90"), std::string::npos) << textual;
  EXPECT_NE(textual.find("libc.so.6: GLIBC_"), std::string::npos) << textual;

  // A missing wheel is bad input (exit 2), named, with a hint; not a crash.
  const std::string nope = (dir / "nope.whl").string();
  auto missing = run(std::string(OPFORGE_BINARY) + " inspect " + nope + " 2>&1", &rc);
  ASSERT_TRUE(WIFEXITED(rc)) << "status " << rc << ": " << missing;
  EXPECT_EQ(WEXITSTATUS(rc), 2) << missing;
  EXPECT_EQ(missing, "opforge: error: " + nope + ": no such file\n  hint: pass a .whl file\n");

  // auditwheel agrees with the tag opforge chose for a real CUDA library (static cudart).
  const std::filesystem::path auditwheel = std::filesystem::path(OPFORGE_SOURCE_DIR) / ".venv-tools/bin/auditwheel";
  if (!std::filesystem::exists(auditwheel)) {
    std::filesystem::remove_all(dir);
    GTEST_SKIP() << "the auditwheel comparison needs " << auditwheel << " (./scripts/deps installs it)";
  }
  auto aw = run(auditwheel.string() + " show --json " + w->path.string(), &rc);
  ASSERT_EQ(rc, 0) << aw;
  EXPECT_EQ(nlohmann::json::parse(aw)["overall_tag"], j["computed_platform"]) << aw;
  std::filesystem::remove_all(dir);
}

}  // namespace opforge::wheel

namespace opforge::wheel {
namespace {

// Real gcc-built libraries, named and linked as a torch extension (pybind11's PyInit_, a
// DT_NEEDED on libc10/libtorch), a stable-ABI extension and a ctypes library are: the tag and the
// sentence inspect prints for each kind.
TEST(WheelInspect, PythonAbiFollowsWhatTheLibrariesAre) {
  auto dir = testing::temp_dir("pyabi");
  // stand-ins for torch's libraries, so the extension's DT_NEEDED names them
  ASSERT_EQ(std::system(("cd " + dir.string() +
                         " && echo 'int c10_x(void){return 1;}' > c10.c && gcc -shared -fPIC -o libc10.so c10.c"
                         " && gcc -shared -fPIC -o libtorch.so c10.c")
                            .c_str()),
            0);
  const std::string ext =
      testing::build_so("pyabi-ext", "int c10_x(void);\nvoid* PyInit__C(void) { return (void*)(long)c10_x(); }\n",
                        "-Wl,--no-as-needed -L" + dir.string() + " -lc10 -ltorch");
  const std::string plain_ext = testing::build_so("pyabi-plain", "void* PyInit_fast(void) { return 0; }\n");
  const std::string ctypes_lib = testing::build_so("pyabi-ctypes", "int opforge_add(int a, int b) { return a + b; }\n");
  ASSERT_FALSE(ext.empty());
  ASSERT_FALSE(plain_ext.empty());
  ASSERT_FALSE(ctypes_lib.empty());
  auto elf = [](const std::string& bytes) { return read_elf(bytes).value(); };
  EXPECT_EQ(elf(ext).python_init, std::vector<std::string>{"PyInit__C"});
  EXPECT_TRUE(elf(ctypes_lib).python_init.empty());

  const std::string torch_ext = "causal_conv1d_cuda.cpython-311-x86_64-linux-gnu.so";
  auto d = abi_tag({"pkg/__init__.py", torch_ext}, 0, {{torch_ext, elf(ext)}});
  EXPECT_EQ(d.python_abi, "cp311-cp311");
  EXPECT_EQ(d.reason, torch_ext +
                          " is a CPython extension for CPython 3.11 only (its file name says cpython-311; not the "
                          "stable ABI); " +
                          torch_ext +
                          " is linked against torch's libraries (libtorch, libc10): it loads only with "
                          "the torch it was built against");

  d = abi_tag({"fast.so"}, 0, {{"fast.so", elf(plain_ext)}});
  EXPECT_EQ(d.python_abi, "");
  EXPECT_EQ(d.reason, "fast.so is a CPython extension (exporting PyInit_*) whose file name does not say which CPython");

  d = abi_tag({"pkg/_lib/libopforge_utils.so"}, 0, {{"pkg/_lib/libopforge_utils.so", elf(ctypes_lib)}});
  EXPECT_EQ(d.python_abi, "py3-none");
  EXPECT_EQ(d.reason,
            "no file is a CPython extension (no *.abi3.so or *.cpython-3XY-*.so, none exports PyInit_*): its shared "
            "libraries are loaded with ctypes, any Python 3");

  d = abi_tag({"pkg/_lib/_hooks.abi3.so", "pkg/_lib/libx.so"}, 8,
              {{"pkg/_lib/_hooks.abi3.so", elf(plain_ext)}, {"pkg/_lib/libx.so", elf(ctypes_lib)}});
  EXPECT_EQ(d.python_abi, "cp38-abi3");
  EXPECT_EQ(d.reason,
            "pkg/_lib/_hooks.abi3.so is a CPython extension built against the stable ABI (abi3, Py_LIMITED_API 3.8): "
            "CPython 3.8 and later");

  d = abi_tag({"a.cpython-310-x86_64-linux-gnu.so", "b.cpython-311-x86_64-linux-gnu.so"}, 0, {});
  EXPECT_EQ(d.python_abi, "");
  EXPECT_EQ(d.reason,
            "a.cpython-310-x86_64-linux-gnu.so, b.cpython-311-x86_64-linux-gnu.so are CPython extensions for several "
            "CPython versions (310, 311): one wheel cannot be tagged for all");
}

}  // namespace
}  // namespace opforge::wheel
