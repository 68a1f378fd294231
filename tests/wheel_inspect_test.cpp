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
  EXPECT_EQ(d.reason, torch_ext + " is a CPython extension for CPython 3.11 only, not the stable ABI; " + torch_ext +
                          ": its file name says cpython-311, it exports PyInit__C, it uses no CPython symbol; " +
                          torch_ext +
                          " is linked against torch's libraries (libtorch, libc10): it loads only with "
                          "the torch it was built against");
  EXPECT_TRUE(d.conflicts.empty());

  d = abi_tag({"fast.so"}, 0, {{"fast.so", elf(plain_ext)}});
  EXPECT_EQ(d.python_abi, "");
  EXPECT_EQ(d.reason,
            "fast.so needs one CPython version, and neither a file's name (*.cpython-3XY-*.so) nor the wheel's tag "
            "says which; fast.so: it exports PyInit_fast, it uses no CPython symbol");

  d = abi_tag({"pkg/_lib/libopforge_utils.so"}, 0, {{"pkg/_lib/libopforge_utils.so", elf(ctypes_lib)}});
  EXPECT_EQ(d.python_abi, "py3-none");
  EXPECT_EQ(d.reason,
            "no file is a CPython extension (no *.abi3.so or *.cpython-3XY-*.so, none exports PyInit_*, none uses a "
            "CPython symbol): its shared libraries are loaded with ctypes, any Python 3");

  d = abi_tag({"pkg/_lib/_hooks.abi3.so", "pkg/_lib/libx.so"}, 8,
              {{"pkg/_lib/_hooks.abi3.so", elf(plain_ext)}, {"pkg/_lib/libx.so", elf(ctypes_lib)}});
  EXPECT_EQ(d.python_abi, "cp38-abi3");
  EXPECT_EQ(d.reason,
            "pkg/_lib/_hooks.abi3.so is a CPython extension built against the stable ABI (abi3, Py_LIMITED_API 3.8): "
            "CPython 3.8 and later; pkg/_lib/_hooks.abi3.so: its file name says abi3, it exports PyInit_fast, it uses "
            "no CPython symbol");

  d = abi_tag({"a.cpython-310-x86_64-linux-gnu.so", "b.cpython-311-x86_64-linux-gnu.so"}, 0, {});
  EXPECT_EQ(d.python_abi, "");
  EXPECT_EQ(d.reason,
            "a.cpython-310-x86_64-linux-gnu.so, b.cpython-311-x86_64-linux-gnu.so are tied to several CPython "
            "versions (310, 311): one wheel cannot be tagged for all; a.cpython-310-x86_64-linux-gnu.so: its file "
            "name says cpython-310; b.cpython-311-x86_64-linux-gnu.so: its file name says cpython-311");
}

// The table of CPython's symbols compiled in parses, and says what CPython's libpython exports.
TEST(WheelPythonAbi, SymbolTableParses) {
  EXPECT_EQ(cpython_measured(), (std::pair{6, 13}));
  ElfInfo e;
  e.unversioned_undefined = {"PyLong_FromLong", "_PyThreadState_UncheckedGet", "malloc"};
  auto u = python_use("x.so", e);
  EXPECT_EQ(u.kind, PythonUse::Kind::version);
  EXPECT_EQ(u.symbols, (std::vector<std::string>{"PyLong_FromLong", "_PyThreadState_UncheckedGet"}));
  EXPECT_EQ(u.beyond_stable, std::vector<std::string>{"_PyThreadState_UncheckedGet"});
  // 3.13 renamed it PyThreadState_GetUnchecked
  EXPECT_EQ(u.minors, (std::vector<int>{6, 7, 8, 9, 10, 11, 12}));
  e.unversioned_undefined = {"PyModule_Create2", "PyType_FromModuleAndSpec"};
  u = python_use("x.abi3.so", e);
  EXPECT_EQ(u.kind, PythonUse::Kind::stable);
  EXPECT_EQ(u.minors, (std::vector<int>{9, 10, 11, 12, 13}));
  e.unversioned_undefined = {};
  e.needed = {"libpython3.11.so.1.0", "libc.so.6"};
  u = python_use("bin/embed", e);
  EXPECT_EQ(u.kind, PythonUse::Kind::version);
  EXPECT_EQ(u.libpython, "311");
}

// The wheel: a library that calls CPython's internals, under a name that says nothing, with
// no PyInit_: the symbols tie it to one CPython; which one comes from the tag when no file says.
TEST(WheelPythonAbi, LibraryCallingCpythonWithoutPyInitOrSuffix) {
  const std::string lib = testing::build_so("pyabi-helper",
                                            "void* _PyType_Lookup(void*, void*);\n"
                                            "void* _PyThreadState_UncheckedGet(void);\n"
                                            "void* PyLong_FromLong(long);\n"
                                            "void* foo_lookup(void* t, void* n) {\n"
                                            "  (void)_PyThreadState_UncheckedGet();\n"
                                            "  return t ? _PyType_Lookup(t, n) : PyLong_FromLong(1);\n"
                                            "}\n");
  ASSERT_FALSE(lib.empty());
  const std::string path = "foo/_lib/libfoo.so";
  const std::map<std::string, ElfInfo> elfs{{path, read_elf(lib).value()}};
  EXPECT_TRUE(elfs.at(path).python_init.empty());

  // no tag to go by: it needs one CPython, and says which are possible
  auto d = abi_tag({path}, 0, elfs);
  EXPECT_EQ(d.python_abi, "");
  EXPECT_EQ(d.reason,
            "foo/_lib/libfoo.so needs one CPython version, and neither a file's name (*.cpython-3XY-*.so) nor the "
            "wheel's tag says which; foo/_lib/libfoo.so: it uses _PyThreadState_UncheckedGet, _PyType_Lookup "
            "outside the stable ABI; CPython 3.6-3.12 (of 3.6-3.13) export them all");
  EXPECT_EQ(d.extension_files, std::vector<std::string>{path});

  // the build tagged it cp311-cp311: that is the version, and the reason says where it came from
  d = abi_tag({path}, 0, elfs, {"cp311-cp311"});
  EXPECT_EQ(d.python_abi, "cp311-cp311");
  EXPECT_EQ(d.reason,
            "foo/_lib/libfoo.so is built against CPython 3.11 only, not the stable ABI (no file's name says which "
            "CPython: the wheel's tag says cp311-cp311); foo/_lib/libfoo.so: it uses _PyThreadState_UncheckedGet, "
            "_PyType_Lookup outside the stable ABI; CPython 3.6-3.12 (of 3.6-3.13) export them all");
  EXPECT_TRUE(d.conflicts.empty());

  // a tag for a CPython that does not export them
  d = abi_tag({path}, 0, elfs, {"cp313-cp313"});
  EXPECT_EQ(d.python_abi, "cp313-cp313");
  EXPECT_EQ(d.conflicts, std::vector<std::string>{"foo/_lib/libfoo.so uses _PyThreadState_UncheckedGet, which "
                                                  "CPython 3.13 does not export: it cannot load it"});

  // tagged py3-none, as inspect used to say: the files contradict it
  d = abi_tag({path}, 0, elfs, {"py3-none"});
  EXPECT_EQ(d.python_abi, "");
  EXPECT_EQ(d.conflicts, std::vector<std::string>{"the wheel's tag says py3-none, but foo/_lib/libfoo.so uses CPython "
                                                  "beyond the stable ABI: only the CPython it was built for loads it"});

  // inspect of such a wheel, as the CLI prints it
  auto dir = testing::temp_dir("pyabi-wheel");
  Spec s;
  s.name = "foo";
  s.version = "1.0";
  s.tags = {"py3-none-linux_x86_64"};
  s.files = {{path, lib, 0755}};
  auto m = probe::real_machine();
  auto w = write(m.fs, s, dir);
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->packed.abi.conflicts.size(), 1u);
  int rc = 0;
  auto out = run(std::string(OPFORGE_BINARY) + " inspect --json " + w->path.string(), &rc);
  ASSERT_EQ(rc, 0) << out;
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["computed_python_abi"], "");
  EXPECT_EQ(j["python_abi_conflicts"], nlohmann::json(d.conflicts));
  auto text = run(std::string(OPFORGE_BINARY) + " inspect " + w->path.string(), &rc);
  EXPECT_NE(text.find("    because foo/_lib/libfoo.so needs one CPython version"), std::string::npos) << text;
  EXPECT_NE(text.find("\n    disagrees: the wheel's tag says py3-none, but foo/_lib/libfoo.so uses CPython"),
            std::string::npos)
      << text;
  std::filesystem::remove_all(dir);
}

// A ctypes library (no CPython symbol, no PyInit_): py3-none, and a cp tag on it is named.
TEST(WheelPythonAbi, CtypesLibraryIsPy3None) {
  const std::string lib =
      testing::build_so("pyabi-ctypes2", "#include <stdlib.h>\nvoid* foo_alloc(long n) { return malloc(n); }\n");
  ASSERT_FALSE(lib.empty());
  const std::map<std::string, ElfInfo> elfs{{"foo/libfoo.so", read_elf(lib).value()}};
  EXPECT_EQ(python_use("foo/libfoo.so", elfs.at("foo/libfoo.so")).kind, PythonUse::Kind::none);
  auto d = abi_tag({"foo/__init__.py", "foo/libfoo.so"}, 0, elfs, {"py3-none"});
  EXPECT_EQ(d.python_abi, "py3-none");
  EXPECT_TRUE(d.conflicts.empty());
  d = abi_tag({"foo/__init__.py", "foo/libfoo.so"}, 0, elfs, {"cp311-cp311"});
  EXPECT_EQ(d.python_abi, "py3-none");
  EXPECT_EQ(d.conflicts, std::vector<std::string>{"the wheel's tag says cp311-cp311, but no file uses CPython: "
                                                  "py3-none would let every Python 3 install it"});
}

// A limited-API extension (stable-ABI symbols only, PyInit_x, x.abi3.so): cp3X-abi3, and a floor
// below what its symbols need is named.
TEST(WheelPythonAbi, LimitedApiExtensionIsAbi3) {
  const std::string ext =
      testing::build_so("pyabi-limited",
                        "void* PyModule_Create2(void*, int);\n"
                        "void* PyLong_FromLong(long);\n"
                        "static char def[128];\n"
                        "void* PyInit_x(void) { PyLong_FromLong(0); return PyModule_Create2(def, 3); }\n");
  const std::string newer = testing::build_so("pyabi-limited39",
                                              "void* PyType_FromModuleAndSpec(void*, void*, void*);\n"
                                              "void* PyInit_y(void) { return PyType_FromModuleAndSpec(0, 0, 0); }\n");
  ASSERT_FALSE(ext.empty());
  ASSERT_FALSE(newer.empty());
  const std::string path = "pkg/x.abi3.so";
  std::map<std::string, ElfInfo> elfs{{path, read_elf(ext).value()}};
  EXPECT_EQ(python_use(path, elfs.at(path)).kind, PythonUse::Kind::stable);
  auto d = abi_tag({path}, 8, elfs, {"cp38-abi3"});
  EXPECT_EQ(d.python_abi, "cp38-abi3");
  EXPECT_EQ(d.reason,
            "pkg/x.abi3.so is a CPython extension built against the stable ABI (abi3, Py_LIMITED_API 3.8): CPython 3.8 "
            "and later; pkg/x.abi3.so: its file name says abi3, it exports PyInit_x, it uses only stable-ABI symbols "
            "(PyLong_FromLong, PyModule_Create2); CPython 3.6-3.13 (of 3.6-3.13) export them all");
  EXPECT_TRUE(d.conflicts.empty());
  EXPECT_EQ(d.abi3_files, std::vector<std::string>{path});
  // tagged for one version: narrower than it needs, and said
  d = abi_tag({path}, 0, elfs, {"cp311-cp311"});
  EXPECT_EQ(d.python_abi, "");
  EXPECT_EQ(d.reason.rfind("pkg/x.abi3.so built against the stable ABI (abi3), for a Python floor not known; ", 0), 0u)
      << d.reason;

  elfs = {{"pkg/y.abi3.so", read_elf(newer).value()}};
  d = abi_tag({"pkg/y.abi3.so"}, 8, elfs, {"cp38-abi3"});
  EXPECT_EQ(d.python_abi, "cp38-abi3");
  EXPECT_EQ(d.conflicts, std::vector<std::string>{"pkg/y.abi3.so uses PyType_FromModuleAndSpec, which CPython 3.8 does "
                                                  "not export: the floor is too low"});
}

// A command build's wheel tagged py3-none whose extension's name says cpython-311: normalising
// (Retag::yes) gives it the tag its files need; without Retag the given tags stay.
TEST(WheelPythonAbi, RetagFixesPy3NoneOfACpythonExtension) {
  const std::string ext = testing::build_so("pyabi-retag",
                                            "void* _PyType_Lookup(void*, void*);\n"
                                            "void* PyInit__C(void) { return _PyType_Lookup(0, 0); }\n");
  ASSERT_FALSE(ext.empty());
  Spec s;
  s.name = "foo";
  s.version = "1.0";
  s.tags = {"py3-none-linux_x86_64"};
  s.files = {{"foo/_C.cpython-311-x86_64-linux-gnu.so", ext, 0755}};
  auto kept = pack(s);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(kept->tags, std::vector<std::string>{"py3-none-linux_x86_64"});
  EXPECT_EQ(kept->abi.python_abi, "cp311-cp311");
  EXPECT_EQ(kept->abi.conflicts,
            std::vector<std::string>{"the wheel's tag says py3-none, but its files say cp311-cp311: "
                                     "foo/_C.cpython-311-x86_64-linux-gnu.so loads only in CPython 3.11"});
  s.retag = Spec::Retag::yes;
  auto fixed = pack(s);
  ASSERT_TRUE(fixed) << fixed.error().message;
  ASSERT_EQ(fixed->tags.size(), 1u);
  EXPECT_EQ(fixed->tags[0].rfind("cp311-cp311-manylinux_", 0), 0u) << fixed->tags[0];
}

}  // namespace
}  // namespace opforge::wheel
