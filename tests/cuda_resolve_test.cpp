#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cuda/resolve.h"
#include "probe/fake_machine.h"
#include "test_util.h"

namespace opforge::cuda {
namespace {

namespace sfs = std::filesystem;

using test_util::data;
using test_util::slurp;

/// The real file system seen through a root folder, so that fixture toolkits sit at their real
/// absolute places (/usr/local/cuda-11.8, ...) without touching the machine's own toolkits.
class RootedFileSystem final : public probe::FileSystem {
 public:
  explicit RootedFileSystem(sfs::path root) : root_(sfs::canonical(root)), real_(probe::real_machine().fs) {}
  sfs::path in(const sfs::path& p) const { return root_ / p.relative_path(); }
  probe::FileType type_of(const sfs::path& p) const override { return real_.type_of(in(p)); }
  probe::FileType resolved_type(const sfs::path& p) const override { return real_.resolved_type(in(p)); }
  bool is_executable(const sfs::path& p) const override { return real_.is_executable(in(p)); }
  Result<std::vector<std::string>> list_directory(const sfs::path& p) const override {
    return real_.list_directory(in(p));
  }
  Result<sfs::path> read_symlink(const sfs::path& p) const override { return real_.read_symlink(in(p)); }
  Result<sfs::path> canonical(const sfs::path& p) const override {
    auto c = OPFORGE_TRY(real_.canonical(in(p)));
    return sfs::path("/") / c.lexically_relative(root_);
  }
  std::optional<probe::FileStamp> stamp(const sfs::path& p) const override { return real_.stamp(in(p)); }
  Status write_file_atomic(const sfs::path&, std::string_view, unsigned) override { return failure("read-only"); }
  Status create_directories(const sfs::path&) override { return failure("read-only"); }
  Status create_symlink(const sfs::path&, const sfs::path&) override { return failure("read-only"); }
  Status rename(const sfs::path&, const sfs::path&) override { return failure("read-only"); }
  Status remove(const sfs::path&) override { return failure("read-only"); }
  Status remove_all(const sfs::path&) override { return failure("read-only"); }
  Result<sfs::path> make_temp_directory(std::string_view) override { return failure("read-only"); }

 protected:
  Result<std::string> read_bounded(const sfs::path& p, std::uint64_t max) const override {
    return real_.read_file(in(p), max);
  }

 private:
  sfs::path root_;
  probe::FileSystem& real_;
};

const char* kSite = "/venv/lib/python3.11/site-packages";

// What the python probe prints for a venv whose torch is in site-packages.
std::string python_probe_output() {
  return std::string("{\"torch\": \"") + kSite + "/torch/__init__.py\", \"locations\": [\"" + kSite +
         "/torch\"], \"path\": [\"\", \"/usr/lib/python311.zip\", \"" + kSite + "\"], \"cflags\": \"-O3\"}\n";
}

struct World {
  RootedFileSystem fs{sfs::path(OPFORGE_TEST_FIXTURES) / "toolkits"};
  probe::FakeMachine fake;
  World() {
    fake.env.set("PATH", "/usr/local/bin:/usr/bin");
    fake.proc.on({"/usr/local/cuda-12.4/bin/nvcc", "--version"}, {0, 0, false, data("nvcc/12.4.txt"), ""});
    fake.proc.on({std::string(kSite) + "/nvidia/cu13/bin/nvcc", "--version"}, {0, 0, false, data("nvcc/13.0.txt"), ""});
    fake.proc.on({"python3"}, {0, 0, false, python_probe_output(), ""});
  }
  probe::Machine machine() { return probe::Machine{fs, fake.proc, fake.env, fake.dl}; }
};

std::optional<TorchInfo> torch_with(std::optional<std::string> cuda) {
  TorchInfo t;
  t.python = "python3";
  t.torch_version = "2.6.0";
  if (cuda) t.cuda = parse_version(*cuda);
  t.site_packages = kSite;
  return t;
}

TEST(CudaParse, VersionSourcesOnCapturedTexts) {
  EXPECT_EQ(parse_nvcc_version(data("nvcc/13.0.txt")), (Version{13, 0}));
  EXPECT_EQ(parse_nvcc_version(data("nvcc/12.4.txt")), (Version{12, 4}));
  EXPECT_EQ(parse_nvcc_version(data("nvcc/11.8.txt")), (Version{11, 8}));
  EXPECT_EQ(parse_nvcc_version(data("nvcc/10.2.txt")), (Version{10, 2}));
  EXPECT_EQ(parse_version_json(data("cuda_version/version-12.6.json")), (Version{12, 6}));
  EXPECT_EQ(parse_version_json(data("cuda_version/version-11.8.json")), (Version{11, 8}));
  EXPECT_EQ(parse_version_txt(data("cuda_version/version-10.2.txt")), (Version{10, 2}));
  EXPECT_EQ(parse_cuda_h(data("cuda_version/cuda-13.0.h")), (Version{13, 0}));
  EXPECT_EQ(parse_version_json("{not json"), std::nullopt);
  EXPECT_EQ(parse_nvcc_version("no release here"), std::nullopt);
}

TEST(CudaParse, TorchVersionPy) {
  auto gpu = parse_torch_version_py(
      slurp(sfs::path(OPFORGE_TEST_FIXTURES) / "toolkits" / "venv/lib/python3.11/site-packages/torch/version.py"));
  EXPECT_EQ(gpu.version, "2.6.0+cu124");
  EXPECT_EQ(gpu.cuda, (Version{12, 4}));
  auto cpu = parse_torch_version_py("__version__ = '1.13.0a0'\ndebug = False\ncuda = None\n");
  EXPECT_EQ(cpu.version, "1.13.0a0");
  EXPECT_EQ(cpu.cuda, std::nullopt);
}

// The grammars at their edges: what the scanners take and refuse.
TEST(CudaParse, VersionGrammarEdges) {
  EXPECT_EQ(parse_nvcc_version("Cuda compilation tools, release \t\n 12.4, V12.4.131"), (Version{12, 4}));
  EXPECT_EQ(parse_nvcc_version("release 12.4.1"), (Version{12, 4}));
  EXPECT_EQ(parse_nvcc_version("release 12, then release 11.8"), (Version{11, 8}));
  EXPECT_EQ(parse_nvcc_version("prerelease 12.1"), (Version{12, 1}));
  EXPECT_EQ(parse_nvcc_version("release12.4"), std::nullopt);
  EXPECT_EQ(parse_nvcc_version("release 12"), std::nullopt);
  EXPECT_EQ(parse_nvcc_version("release 12."), std::nullopt);
  EXPECT_EQ(parse_nvcc_version("release .4"), std::nullopt);
  EXPECT_EQ(parse_nvcc_version("release"), std::nullopt);
  EXPECT_EQ(parse_version_txt("CUDA Version 10.2.89\n"), (Version{10, 2}));
  EXPECT_EQ(parse_version_txt("CUDA Version10.2"), std::nullopt);
  EXPECT_EQ(parse_version_txt("CUDA  version 10.2"), std::nullopt);
  EXPECT_EQ(parse_cuda_h("#define CUDA_VERSION_MINOR 5\n#define CUDA_VERSION 12040\n"), (Version{12, 4}));
  EXPECT_EQ(parse_cuda_h("#define \t CUDA_VERSION\t11080"), (Version{11, 8}));
  EXPECT_EQ(parse_cuda_h("#define CUDA_VERSION"), std::nullopt);
  EXPECT_EQ(parse_cuda_h("#define CUDA_VERSION x"), std::nullopt);
  EXPECT_EQ(parse_cuda_h("#defineCUDA_VERSION 12000"), std::nullopt);
  EXPECT_EQ(parse_cuda_h("#define CUDA_VERSION 1234567"), std::nullopt);
}

TEST(CudaParse, TorchVersionPyGrammarEdges) {
  auto v = [](std::string_view text) { return parse_torch_version_py(text).version; };
  auto cu = [](std::string_view text) { return parse_torch_version_py(text).cuda; };
  EXPECT_EQ(v("__version__=\"2.1.0\""), "2.1.0");
  EXPECT_EQ(v("x = 1\n__version__ \t= '2.2'\n"), "2.2");
  EXPECT_EQ(v("__version__ = '2.1\""), "2.1");                   // either quote closes
  EXPECT_EQ(v("__version__ = ''\n__version__ = '3.0'"), "3.0");  // empty: the next line
  EXPECT_EQ(v(" __version__ = '1.0'"), std::nullopt);            // not at a line start
  EXPECT_EQ(v("my__version__ = '1.0'"), std::nullopt);
  EXPECT_EQ(v("__version__ = 1.0"), std::nullopt);
  EXPECT_EQ(v("__version__ = '1.0"), std::nullopt);
  EXPECT_EQ(cu("cuda: Optional[str] = '12.1'"), (Version{12, 1}));
  EXPECT_EQ(cu("cuda: = '12.1'"), (Version{12, 1}));
  EXPECT_EQ(cu("cuda:\n  str = '12.1'"), (Version{12, 1}));   // line breaks before the type
  EXPECT_EQ(cu("cuda: str\n= '12.1'"), std::nullopt);         // the type is on one line
  EXPECT_EQ(cu("cuda:= '12.1'"), std::nullopt);               // ':' needs a type
  EXPECT_EQ(cu("cuda = None\ncuda = '12.1'"), std::nullopt);  // the first assignment wins
  EXPECT_EQ(cu("cuda = xyz\ncuda = '11.8'"), (Version{11, 8}));
  EXPECT_EQ(cu("cudax = '12.1'"), std::nullopt);
  EXPECT_EQ(cu("cuda = '12.1"), std::nullopt);
  EXPECT_EQ(cu("cuda = ''"), std::nullopt);
}

TEST(CudaParse, NvccWrapperScripts) {
  EXPECT_EQ(parse_nvcc_wrapper("#!/bin/sh\nexec /usr/local/cuda-12.4/bin/nvcc \"$@\"\n"),
            sfs::path("/usr/local/cuda-12.4/bin/nvcc"));
  EXPECT_EQ(parse_nvcc_wrapper("#!/bin/sh\n  \n\t exec  \"/opt/cuda/bin/nvcc\" \"$@\""),
            sfs::path("/opt/cuda/bin/nvcc"));
  EXPECT_EQ(parse_nvcc_wrapper("#!/bin/sh\nexec '/opt/x/bin/nvcc'"), sfs::path("/opt/x/bin/nvcc"));
  EXPECT_EQ(parse_nvcc_wrapper("#!/bin/sh\nexec /opt/x/bin/nvcc;"), sfs::path("/opt/x/bin/nvcc"));
  EXPECT_EQ(parse_nvcc_wrapper("#!/bin/sh\nexec\n/opt/x/bin/nvcc"), sfs::path("/opt/x/bin/nvcc"));
  EXPECT_EQ(parse_nvcc_wrapper("#!/bin/sh\necho exec /opt/x/bin/nvcc"), std::nullopt);  // not at a line start
  EXPECT_EQ(parse_nvcc_wrapper("#!/bin/sh\nexec nvcc"), std::nullopt);                  // no folder
  EXPECT_EQ(parse_nvcc_wrapper("#!/bin/sh\nexec /nvcc"), std::nullopt);
  EXPECT_EQ(parse_nvcc_wrapper("#!/bin/sh\nexec/opt/x/bin/nvcc"), std::nullopt);
  // The word up to its last "/nvcc": the first exec line decides.
  EXPECT_EQ(parse_nvcc_wrapper("#!/bin/sh\nexec /a/nvcc-x\nexec /b/nvcc\n"), sfs::path("/a/nvcc"));
  EXPECT_EQ(parse_nvcc_wrapper("#!/bin/sh\nexec /a/bin\nexec /b/nvcc\n"), sfs::path("/b/nvcc"));
  EXPECT_EQ(parse_nvcc_wrapper(std::string(100000, '\n')), std::nullopt);
}

TEST(CudaReadTorch, OnePythonCallThenVersionPy) {
  World w;
  auto t = read_torch(w.machine(), "python3");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->torch_version, "2.6.0+cu124");
  EXPECT_EQ(t->cuda, (Version{12, 4}));
  EXPECT_EQ(t->site_packages, kSite);
  ASSERT_EQ(w.fake.proc.calls().size(), 1u);
  EXPECT_EQ(w.fake.proc.calls()[0].argv[0], "python3");
}

TEST(CudaDiscover, FollowsWrapperAndAvoidsUsrLocalTrap) {
  World w;
  auto r = discover(w.machine(), torch_with("12.4"));
  std::vector<std::string> roots;
  for (auto& c : r.candidates) roots.push_back(c.path.string());
  EXPECT_EQ(std::count(roots.begin(), roots.end(), "/usr/local"), 0);
  auto at = [&](const char* path) -> const Candidate* {
    for (auto& c : r.candidates)
      if (c.path == path) return &c;
    return nullptr;
  };
  const Candidate* c124 = at("/usr/local/cuda-12.4");
  ASSERT_TRUE(c124);
  EXPECT_EQ(c124->found_by, "nvcc on PATH (wrapper script /usr/local/bin/nvcc), /usr/local/cuda-*");
  ASSERT_TRUE(c124->toolkit);
  EXPECT_EQ(c124->toolkit->version_source, "nvcc --version");
  const Candidate* c102 = at("/usr/local/cuda-10.2");
  ASSERT_TRUE(c102 && c102->toolkit);
  EXPECT_EQ(c102->toolkit->version_source, "version.txt");
  const Candidate* c118 = at("/usr/local/cuda-11.8");
  ASSERT_TRUE(c118 && c118->toolkit);
  EXPECT_EQ(c118->toolkit->version_source, "version.json");
  EXPECT_EQ(c118->toolkit->include_dir, "/usr/local/cuda-11.8/targets/x86_64-linux/include");
  EXPECT_EQ(c118->toolkit->lib_dir, "/usr/local/cuda-11.8/targets/x86_64-linux/lib");
  const Candidate* opt = at("/opt/cuda");
  ASSERT_TRUE(opt);
  EXPECT_FALSE(opt->toolkit);
  EXPECT_EQ(opt->said(),
            "rejected: no libcudart* in lib64/, lib/, targets/*/lib/ or the folders its nvcc.profile names");
  // Version files answer first: nvcc ran only for the two toolkits without them.
  EXPECT_EQ(w.fake.proc.calls().size(), 2u);
}

struct MatrixCase {
  std::optional<std::string> torch_cuda;
  std::string spec;
  std::string chosen;
};

void PrintTo(const MatrixCase& c, std::ostream* os) {
  *os << "torch " << c.torch_cuda.value_or("none") << ", [cuda] version " << c.spec;
}

class CudaChooseMatrix : public testing::TestWithParam<MatrixCase> {};

TEST_P(CudaChooseMatrix, Chooses) {
  World w;
  auto& p = GetParam();
  auto r = choose(discover(w.machine(), torch_with(p.torch_cuda)), p.spec, w.fake.env);
  ASSERT_TRUE(r) << r.error().render();
  ASSERT_TRUE(r->chosen);
  EXPECT_EQ(r->chosen->root.string(), p.chosen);
  int chosen = 0;
  for (auto& c : r->candidates) {
    chosen += c.chosen();
    EXPECT_NE(c.verdict, Verdict::valid) << c.path;  // every other candidate says why not
    EXPECT_FALSE(c.why.empty()) << c.path;
    EXPECT_EQ(c.verdict, c.chosen() ? Verdict::chosen : c.toolkit ? Verdict::not_chosen : Verdict::rejected) << c.path;
  }
  EXPECT_EQ(chosen, 1);
}

const std::string kPip = std::string(kSite) + "/nvidia/cu13";
INSTANTIATE_TEST_SUITE_P(Fixtures, CudaChooseMatrix,
                         testing::Values(MatrixCase{"10.2", "auto", "/usr/local/cuda-10.2"},
                                         MatrixCase{"11.8", "auto", "/usr/local/cuda-11.8"},
                                         MatrixCase{"12.4", "auto", "/usr/local/cuda-12.4"},
                                         MatrixCase{"13.0", "auto", kPip}, MatrixCase{std::nullopt, "auto", kPip},
                                         MatrixCase{"10.2", "torch", "/usr/local/cuda-10.2"},
                                         MatrixCase{"11.8", "torch", "/usr/local/cuda-11.8"},
                                         MatrixCase{"12.4", "torch", "/usr/local/cuda-12.4"},
                                         MatrixCase{"13.0", "torch", kPip},
                                         MatrixCase{std::nullopt, "11.8", "/usr/local/cuda-11.8"},
                                         MatrixCase{std::nullopt, ">=11,<12.5", "/usr/local/cuda-12.4"},
                                         MatrixCase{std::nullopt, ">=12.1,<13", "/usr/local/cuda-12.4"},
                                         MatrixCase{std::nullopt, "<11", "/usr/local/cuda-10.2"}));

TEST(CudaChoose, NoTorchSitePackagesMeansNoPipToolkit) {
  World w;
  auto r = choose(discover(w.machine(), std::nullopt), "auto", w.fake.env);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->chosen->root, "/usr/local/cuda-12.4");
}

TEST(CudaChoose, CudaHomeWinsUnderAuto) {
  World w;
  w.fake.env.set("CUDA_HOME", "/usr/local/cuda-11.8");
  auto r = choose(discover(w.machine(), torch_with("12.4")), "auto", w.fake.env);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->chosen->root, "/usr/local/cuda-11.8");
}

TEST(CudaChoose, TorchMinorMismatchWarns) {
  World w;
  auto r = choose(discover(w.machine(), torch_with("12.1")), "torch", w.fake.env);
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->chosen->root, "/usr/local/cuda-12.4");
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("minor"), std::string::npos);
}

// [cuda] version = "torch" as docs/recipe.md says it: torch's exact major.minor when a toolkit has
// it, else the newest of torch's major with the minor difference named; never another major.
TEST(CudaChoose, TorchTakesItsExactMinorElseTheNewestOfItsMajor) {
  auto toolkit = [](const std::string& root, Version v) {
    Candidate c;
    c.path = root;
    c.origins = {Origin::usr_local_cuda_n};
    c.found_by = "/usr/local/cuda-*";
    c.toolkit = Toolkit{};
    c.toolkit->root = root;
    c.toolkit->version = v;
    c.verdict = Verdict::valid;
    return c;
  };
  Resolution found;
  found.torch = torch_with("13.2");
  found.torch->torch_version = "2.15.0+cu132";
  found.candidates = {toolkit("/usr/local/cuda-12.8", {12, 8}), toolkit("/usr/local/cuda-13.0", {13, 0}),
                      toolkit("/usr/local/cuda-13.1", {13, 1})};
  probe::FakeEnvironment env(std::map<std::string, std::string>{{"PATH", "/usr/bin"}});
  auto r = choose(found, "torch", env);
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->chosen->root, "/usr/local/cuda-13.1");
  EXPECT_EQ(r->candidates[2].why,
            "newest toolkit of torch's CUDA major 13; none here is torch's CUDA 13.2 (PyTorch only warns on a minor "
            "difference)");
  EXPECT_EQ(r->warnings, (std::vector<std::string>{"CUDA 13.1 differs from torch's CUDA 13.2 in the minor version; "
                                                   "this usually works (PyTorch only warns)"}));
  EXPECT_EQ(r->minor_mismatch_warning, 0u);

  found.candidates.push_back(toolkit("/usr/local/cuda-13.2", {13, 2}));
  auto exact = choose(found, "torch", env);
  ASSERT_TRUE(exact) << exact.error().render();
  EXPECT_EQ(exact->chosen->root, "/usr/local/cuda-13.2");
  EXPECT_EQ(exact->candidates[3].why, "same CUDA version as torch 2.15.0+cu132");
  EXPECT_TRUE(exact->warnings.empty());
}

TEST(CudaChoose, TorchMajorMismatchIsAnErrorUnlessSkipped) {
  World w;
  auto r = choose(discover(w.machine(), torch_with("9.2")), "torch", w.fake.env);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::unsatisfied);
  EXPECT_NE(r.error().message.find("major version mismatch"), std::string::npos);
  EXPECT_NE(r.error().hint.find("DS_SKIP_CUDA_CHECK=1"), std::string::npos);
  w.fake.env.set("DS_SKIP_CUDA_CHECK", "1");
  auto s = choose(discover(w.machine(), torch_with("9.2")), "torch", w.fake.env);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->chosen->root, kPip);
}

TEST(CudaChoose, TorchSpecWithCpuTorchSaysSo) {
  World w;
  auto r = choose(discover(w.machine(), torch_with(std::nullopt)), "torch", w.fake.env);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::unsatisfied);
  EXPECT_NE(r.error().message.find("CPU-only"), std::string::npos);
}

TEST(CudaChoose, BadSpecAndUnsatisfiedListEveryCandidate) {
  World w;
  auto bad = choose(discover(w.machine(), torch_with(std::nullopt)), "twelve", w.fake.env);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::bad_input);
  auto none = choose(discover(w.machine(), torch_with(std::nullopt)), "14.0", w.fake.env);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, ErrorKind::unsatisfied);
  for (auto root : {"/usr/local/cuda-10.2", "/usr/local/cuda-11.8", "/usr/local/cuda-12.4", "/opt/cuda"})
    EXPECT_NE(none.error().message.find(root), std::string::npos) << root;
}

TEST(CudaExports, PrependsToCurrentValues) {
  Toolkit tk;
  tk.root = "/usr/local/cuda-12.4";
  tk.lib_dir = "/usr/local/cuda-12.4/lib64";
  probe::FakeEnvironment env(std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}});
  auto e = exports(tk, env);
  EXPECT_EQ(e["CUDA_HOME"], "/usr/local/cuda-12.4");
  EXPECT_EQ(e["PATH"], "/usr/local/cuda-12.4/bin:/usr/bin:/bin");
  EXPECT_EQ(e["LD_LIBRARY_PATH"], "/usr/local/cuda-12.4/lib64");
}

// A toolkit the user named is used or refused with the reason, never passed over.
TEST(CudaChoose, UserNamedToolkitIsUsedOrRefused) {
  struct Row {
    const char* var;
    const char* value;
    const char* spec;
    std::optional<std::string> torch;
    ErrorKind kind;
    const char* message;
  };
  for (auto& row : {Row{"CUDA_HOME", "/nonexistent", "auto", std::nullopt, ErrorKind::bad_input,
                        "CUDA_HOME=/nonexistent is not a CUDA toolkit: no such folder"},
                    Row{"CUDA_PATH", "/usr/local/include", "auto", std::nullopt, ErrorKind::bad_input,
                        "CUDA_PATH=/usr/local/include is not a CUDA toolkit: no executable bin/nvcc"},
                    Row{"CUDA_HOME", "/usr/local/cuda-11.8", "torch", "9.2", ErrorKind::unsatisfied,
                        "CUDA_HOME=/usr/local/cuda-11.8 is CUDA 11.8, but torch 2.6.0 is built for CUDA 9.2"}}) {
    World w;
    w.fake.env.set(row.var, row.value);
    auto r = choose(discover(w.machine(), row.torch ? torch_with(*row.torch) : std::nullopt), row.spec, w.fake.env);
    ASSERT_FALSE(r) << row.value;
    EXPECT_EQ(r.error().kind, row.kind);
    EXPECT_TRUE(r.error().message.starts_with(row.message)) << r.error().message;
    EXPECT_TRUE(r.error().kind == ErrorKind::bad_input || r.error().names_user_setting);
  }
  // The recipe's explicit request wins over the toolkit CUDA_HOME names, which is passed over
  // with a warning saying how to use it instead.
  for (auto [spec, torch] :
       {std::pair<std::string, std::optional<std::string>>{">=12", std::nullopt}, {"torch", "12.4"}}) {
    World w;
    w.fake.env.set("CUDA_HOME", "/usr/local/cuda-11.8");
    auto r = choose(discover(w.machine(), torch ? torch_with(*torch) : std::nullopt), spec, w.fake.env);
    ASSERT_TRUE(r) << r.error().render();
    EXPECT_EQ(r->chosen->root, "/usr/local/cuda-12.4") << spec;
    ASSERT_FALSE(r->warnings.empty());
    EXPECT_TRUE(r->warnings[0].starts_with("CUDA_HOME=/usr/local/cuda-11.8 (CUDA 11.8) is not used: [cuda] version = "))
        << r->warnings[0];
  }
  World w;
  w.fake.env.set("CUDA_PATH", "/usr/local/cuda-11.8");
  auto r = choose(discover(w.machine(), torch_with("12.4")), "!=12.4", w.fake.env);
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->chosen->root, "/usr/local/cuda-11.8");
  w.fake.env.set("CUDA_HOME", "");  // empty counts as unset
  EXPECT_TRUE(choose(discover(w.machine(), torch_with("12.4")), "auto", w.fake.env));
}

TEST(CudaParsers, HugeNumbersAreNoVersion) {
  EXPECT_EQ(parse_cuda_h("#define CUDA_VERSION 99999999999\n"), std::nullopt);
  EXPECT_EQ(parse_nvcc_version("release 99999999999.1, V1"), std::nullopt);
  EXPECT_EQ(parse_version_txt("CUDA Version 99999999999.2"), std::nullopt);
}

TEST(CudaRealMachine, FindsTheRealToolkitNotUsrLocal) {
  auto m = probe::real_machine();
  if (m.fs.type_of("/usr/local/cuda-13.0") == probe::FileType::none) GTEST_SKIP() << "no /usr/local/cuda-13.0";
  auto r = discover(m, std::nullopt);
  const Candidate* real = nullptr;
  for (auto& c : r.candidates) {
    EXPECT_NE(c.path, "/usr/local");
    if (c.path == "/usr/local/cuda-13.0") real = &c;
  }
  ASSERT_TRUE(real);
  ASSERT_TRUE(real->toolkit) << real->said();
  EXPECT_EQ(real->toolkit->version, (Version{13, 0}));
  EXPECT_EQ(real->toolkit->root, "/usr/local/cuda-13.0");
  // Debian's python3-torch (scripts/deps installs it): a CPU-only torch 1.13.
  auto torch = read_torch(m, "/usr/bin/python3");
  ASSERT_TRUE(torch);
  ASSERT_TRUE(torch->torch_version);
  EXPECT_TRUE(torch->torch_version->starts_with("1.13")) << *torch->torch_version;
  EXPECT_EQ(torch->cuda, std::nullopt);
}

}  // namespace
}  // namespace opforge::cuda
