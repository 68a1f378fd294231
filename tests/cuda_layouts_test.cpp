// Every layout a CUDA toolkit comes in, on the fake machine, from the file lists and texts of the
// real packages (tests/data/cuda_layouts/: Debian 12's nvidia-cuda-toolkit 11.8.89 and Debian 13's
// 12.4.131, captured with `apt-get download` + `dpkg -c`/`dpkg -x`).
#include <gtest/gtest.h>

#include <sstream>

#include "compiler/flags.h"
#include "compiler/resolve.h"
#include "cuda/resolve.h"
#include "probe/fake_machine.h"
#include "test_util.h"

namespace opforge::cuda {
namespace {

using test_util::data;

/// Fills `fs` from a captured `dpkg -c` list ("<mode> <path> [-> target]"), with the captured
/// texts where the toolkit's discovery reads them.
void install_package(probe::FakeFileSystem& fs, const std::string& release) {
  const std::string dir = "cuda_layouts/" + release + "/";
  std::istringstream list(data(dir + "files.txt"));
  std::string mode, path, arrow, target;
  for (std::string line; std::getline(list, line);) {
    std::istringstream words(line);
    words >> mode >> path;
    if (mode[0] == 'd') {
      fs.add_directory(path);
    } else if (mode[0] == 'l') {
      words >> arrow >> target;
      fs.add_symlink(path, target);
    } else {
      fs.add_file(path,
                  "\x7f"
                  "ELF",
                  mode[3] == 'x' ? 0755 : 0644);
    }
  }
  fs.add_file("/etc/nvcc.profile", data(dir + "nvcc.profile"));
  fs.add_file("/usr/bin/nvcc", data(dir + "usr-bin-nvcc"), 0755);
  fs.add_file("/usr/lib/nvidia-cuda-toolkit/bin/gcc", data(dir + "bin-gcc"), 0755);
  fs.add_file("/usr/include/crt/host_config.h", data(dir + "host_config.h"));
  fs.add_file("/usr/include/cuda.h", data(dir + "cuda.h-version.txt"));
}

/// NVIDIA's layout: one folder, as on the build machines (/usr/local/cuda-13.0).
void install_nvidia(probe::FakeFileSystem& fs) {
  fs.add_file("/usr/local/cuda-13.0/bin/nvcc",
              "\x7f"
              "ELF",
              0755);
  fs.add_file("/usr/local/cuda-13.0/include/cuda.h", data("cuda_version/cuda-13.0.h"));
  fs.add_file("/usr/local/cuda-13.0/include/crt/host_config.h", data("host_config/13.0.h"));
  fs.add_file("/usr/local/cuda-13.0/lib64/libcudart.so.13",
              "\x7f"
              "ELF");
  fs.add_file("/usr/local/cuda-13.0/version.json", R"({"cuda": {"version": "13.0.88"}})");
  fs.add_symlink("/usr/local/cuda", "/usr/local/cuda-13.0");
}

/// The candidates that are toolkits (/usr/local/cuda is always looked at, and rejected when absent).
std::vector<const Candidate*> valid(const Resolution& r) {
  std::vector<const Candidate*> out;
  for (auto& c : r.candidates)
    if (c.toolkit) out.push_back(&c);
  return out;
}

struct Debian {
  probe::FakeMachine fake;
  explicit Debian(const std::string& release = "debian12") {
    install_package(fake.fs, release);
    fake.env.set("PATH", "/usr/local/bin:/usr/bin:/bin");
    // What the wrapper script runs: the real nvcc's answer (captured).
    fake.proc.on({"/usr/bin/nvcc", "--version"},
                 {0, 0, false, data("cuda_layouts/" + release + "/nvcc-version.txt"), ""});
    fake.proc.on({"/usr/lib/nvidia-cuda-toolkit/bin/nvcc", "--version"},
                 {0, 0, false, data("cuda_layouts/" + release + "/nvcc-version.txt"), ""});
  }
  const Candidate* at(const Resolution& r, const std::string& path) {
    for (auto& c : r.candidates)
      if (c.path == path) return &c;
    return nullptr;
  }
};

TEST(CudaLayouts, NvccProfilesOfTheDistributions) {
  auto p = parse_nvcc_profile(data("cuda_layouts/debian12/nvcc.profile"));
  EXPECT_EQ(p.library_dirs, (std::vector<fs::path>{"/usr/lib/x86_64-linux-gnu/stubs", "/usr/lib/x86_64-linux-gnu"}));
  EXPECT_TRUE(p.include_dirs.empty());  // Debian's cuda.h is in /usr/include: no -I at all
  auto q = parse_nvcc_profile(data("cuda_layouts/debian13/nvcc.profile"));
  EXPECT_EQ(q.library_dirs, p.library_dirs);
  EXPECT_TRUE(q.include_dirs.empty());  // its INCLUDES line is commented out
  // NVIDIA's profile: folders relative to the toolkit ($(TOP)) are the toolkit's own, left out.
  auto n = parse_nvcc_profile(
      "TOP = $(_HERE_)/..\nINCLUDES += \"-I$(TOP)/$(_TARGET_DIR_)/include\" $(_SPACE_)\n"
      "LIBRARIES =+ $(_SPACE_) \"-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)\" \"-L/opt/extra/lib\"\n");
  EXPECT_TRUE(n.include_dirs.empty());
  EXPECT_EQ(n.library_dirs, (std::vector<fs::path>{"/opt/extra/lib"}));
}

TEST(CudaLayouts, WrapperScriptsOfTheDistributions) {
  EXPECT_EQ(parse_nvcc_wrapper(data("cuda_layouts/debian12/usr-bin-nvcc")),
            fs::path("/usr/lib/nvidia-cuda-toolkit/bin/nvcc"));
  // Debian 13's puts its folder on PATH first, then execs.
  EXPECT_EQ(parse_nvcc_wrapper(data("cuda_layouts/debian13/usr-bin-nvcc")),
            fs::path("/usr/lib/nvidia-cuda-toolkit/bin/nvcc"));
  EXPECT_EQ(parse_nvcc_version(data("cuda_layouts/debian12/nvcc-version.txt")), (Version{11, 8}));
  EXPECT_EQ(parse_nvcc_version(data("cuda_layouts/debian13/nvcc-version.txt")), (Version{12, 4}));
  EXPECT_EQ(parse_cuda_h(data("cuda_layouts/debian12/cuda.h-version.txt")), (Version{11, 8}));
  EXPECT_EQ(parse_cuda_h(data("cuda_layouts/debian13/cuda.h-version.txt")), (Version{12, 4}));
}

// `which nvcc` is Debian's /usr/bin/nvcc: the toolkit is /usr, as torch's cpp_extension derives
// CUDA_HOME from it, with the three trees found separately and the version from nvcc itself.
TEST(CudaLayouts, DebianPackageFoundThroughWhichNvcc) {
  for (auto release : {"debian12", "debian13"}) {
    Debian d(release);
    auto r = discover(d.fake.machine(), std::nullopt);
    const Candidate* c = d.at(r, "/usr");
    ASSERT_TRUE(c) << release;
    ASSERT_TRUE(c->toolkit) << c->said();
    EXPECT_EQ(c->found_by, "nvcc on PATH (wrapper script /usr/bin/nvcc)");
    const Toolkit& tk = *c->toolkit;
    EXPECT_EQ(tk.layout, Layout::distribution);
    EXPECT_EQ(tk.nvcc, "/usr/bin/nvcc");
    EXPECT_EQ(tk.real_nvcc, "/usr/lib/nvidia-cuda-toolkit/bin/nvcc");
    EXPECT_EQ(tk.include_dir, "/usr/include");
    EXPECT_EQ(tk.lib_dir, "/usr/lib/x86_64-linux-gnu");
    EXPECT_EQ(tk.version_source, "nvcc --version");  // no version.json, no version.txt
    EXPECT_EQ(tk.version, std::string(release) == "debian12" ? (Version{11, 8}) : (Version{12, 4}));
    // /usr/lib/nvidia-cuda-toolkit is never listed on its own: it is the same toolkit.
    EXPECT_FALSE(d.at(r, "/usr/lib/nvidia-cuda-toolkit"));
  }
}

// How a candidate was reached is typed (Candidate::origins); found_by is only its text, so a
// path that happens to hold "CUDA_HOME" names no origin.
TEST(CudaLayouts, OriginsAreTypedAndFoundByIsTheirText) {
  Debian d;
  d.fake.env.set("CUDA_HOME", "/usr");
  auto r = discover(d.fake.machine(), std::nullopt);
  const Candidate* c = d.at(r, "/usr");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->origins, (std::vector<Origin>{Origin::cuda_home, Origin::nvcc_on_path}));
  EXPECT_TRUE(c->found_through(Origin::nvcc_on_path));
  EXPECT_FALSE(c->found_through(Origin::cuda_path));
  EXPECT_EQ(c->found_by, std::string(origin_name(Origin::cuda_home)) + ", " +
                             std::string(origin_name(Origin::nvcc_on_path)) + " (wrapper script /usr/bin/nvcc)");
  Candidate text_only;
  text_only.origins = {Origin::pip_wheel};
  text_only.found_by = "pip wheel in /home/CUDA_HOME/site-packages";
  EXPECT_FALSE(text_only.found_through(Origin::cuda_home));
  EXPECT_EQ(origin_name(Origin::usr_local_cuda_n), "/usr/local/cuda-*");
  EXPECT_EQ(origin_name(Origin::conda_prefix), "CONDA_PREFIX");
  for (Origin o : {Origin::cuda_home, Origin::cuda_path, Origin::nvcc_on_path, Origin::usr_local_cuda,
                   Origin::usr_local_cuda_n, Origin::opt_cuda, Origin::conda_prefix, Origin::pip_wheel})
    EXPECT_EQ(origin_from_name(origin_name(o)), o);
  EXPECT_EQ(origin_from_name("cuda_home"), std::nullopt);
}

TEST(CudaLayouts, DebianPackageThroughCudaHome) {
  {
    Debian d;
    d.fake.env.set("CUDA_HOME", "/usr");
    auto r = discover(d.fake.machine(), std::nullopt);
    const Candidate* c = d.at(r, "/usr");
    ASSERT_TRUE(c && c->toolkit);
    EXPECT_EQ(c->found_by, "CUDA_HOME, nvcc on PATH (wrapper script /usr/bin/nvcc)");
    EXPECT_EQ(c->toolkit->lib_dir, "/usr/lib/x86_64-linux-gnu");
    EXPECT_EQ(valid(r).size(), 1u);
  }
  {
    // The real nvcc's folder named directly: the same toolkit, listed once.
    Debian d;
    d.fake.env.set("CUDA_HOME", "/usr/lib/nvidia-cuda-toolkit");
    auto r = discover(d.fake.machine(), std::nullopt);
    ASSERT_EQ(valid(r).size(), 1u);
    const Candidate& c = *valid(r)[0];
    ASSERT_TRUE(c.toolkit) << c.said();
    EXPECT_EQ(c.toolkit->layout, Layout::distribution);
    EXPECT_EQ(c.toolkit->include_dir, "/usr/include");
    EXPECT_NE(c.found_by.find("nvcc on PATH"), std::string::npos) << c.found_by;
  }
  {
    // Debian's /usr/lib/cuda: cuda.h linked in, but no nvcc: not a toolkit.
    Debian d;
    d.fake.env.set("CUDA_HOME", "/usr/lib/cuda");
    auto r = discover(d.fake.machine(), std::nullopt);
    const Candidate* c = d.at(r, "/usr/lib/cuda");
    ASSERT_TRUE(c);
    EXPECT_EQ(c->said(), "rejected: no executable bin/nvcc");
  }
}

// What a build gets: CUDA_HOME=/usr (torch's and DeepSpeed's checks then find this toolkit),
// and no system folder put first on PATH or LD_LIBRARY_PATH.
TEST(CudaLayouts, DebianExportsLeaveTheSystemFoldersAlone) {
  Debian d;
  auto r = discover(d.fake.machine(), std::nullopt);
  auto e = exports(*d.at(r, "/usr")->toolkit, d.fake.env);
  EXPECT_EQ(e["CUDA_HOME"], "/usr");
  EXPECT_EQ(e["PATH"], "/usr/local/bin:/usr/bin:/bin");
  EXPECT_FALSE(e.contains("LD_LIBRARY_PATH"));
}

// The host compiler range comes from the package's own host_config.h, in /usr/include/crt.
TEST(CudaLayouts, HostCompilerLimitsFromTheDistributionsHeader) {
  for (auto [release, gcc, clang] : {std::tuple{"debian12", 11, 14}, std::tuple{"debian13", 13, 17}}) {
    Debian d(release);
    auto r = discover(d.fake.machine(), std::nullopt);
    auto l = compiler::limits_for(d.fake.machine(), *d.at(r, "/usr")->toolkit);
    EXPECT_EQ(l.max_gcc, gcc) << release;
    EXPECT_EQ(l.max_clang, clang) << release;
    EXPECT_EQ(l.source, "/usr/include/crt/host_config.h");
  }
}

// Two toolkits on one machine, as in the guides: NVIDIA's 13.0 and Debian's 11.8 behind
// /usr/bin/nvcc. Both listed; the recipe's version chooses; the PATH confusion said in one line.
TEST(CudaLayouts, NvidiasAndTheDistributionsSideBySide) {
  Debian d;
  install_nvidia(d.fake.fs);
  auto r = discover(d.fake.machine(), std::nullopt);
  const Candidate* deb = d.at(r, "/usr");
  const Candidate* nv = d.at(r, "/usr/local/cuda-13.0");
  ASSERT_TRUE(deb && deb->toolkit && nv && nv->toolkit);
  EXPECT_EQ(nv->toolkit->layout, Layout::nvidia);
  EXPECT_EQ(nv->found_by, "/usr/local/cuda, /usr/local/cuda-*");
  auto old = choose(r, "11.8", d.fake.env);
  ASSERT_TRUE(old) << old.error().render();
  EXPECT_EQ(old->chosen->root, "/usr");
  auto newest = choose(r, "auto", d.fake.env);
  ASSERT_TRUE(newest);
  EXPECT_EQ(newest->chosen->root, "/usr/local/cuda-13.0");
  ASSERT_EQ(newest->warnings.size(), 1u);
  EXPECT_EQ(newest->warnings[0],
            "the nvcc on PATH (/usr/bin/nvcc, CUDA 11.8) is not the toolkit chosen (CUDA 13.0 at "
            "/usr/local/cuda-13.0); opforge's builds use the chosen one, a build by hand needs "
            "/usr/local/cuda-13.0/bin first on PATH");
}

// conda's layout: bin/nvcc, the headers and libraries under targets/x86_64-linux.
TEST(CudaLayouts, CondaEnvironment) {
  probe::FakeMachine fake;
  const std::string env = "/opt/conda/envs/cu";
  fake.fs.add_file(env + "/bin/nvcc",
                   "\x7f"
                   "ELF",
                   0755);
  fake.fs.add_file(env + "/targets/x86_64-linux/include/cuda.h", "#define CUDA_VERSION 12040\n");
  fake.fs.add_file(env + "/targets/x86_64-linux/lib/libcudart.so.12",
                   "\x7f"
                   "ELF");
  fake.fs.add_directory(env + "/conda-meta");
  fake.env.set("CONDA_PREFIX", env);
  auto r = discover(fake.machine(), std::nullopt);
  ASSERT_EQ(valid(r).size(), 1u) << r.candidates.back().said();
  const Toolkit& tk = *valid(r)[0]->toolkit;
  EXPECT_EQ(tk.layout, Layout::conda);
  EXPECT_EQ(tk.version_source, "cuda.h");  // nvcc --version answered nothing here
  EXPECT_EQ(tk.version, (Version{12, 4}));
  EXPECT_EQ(tk.include_dir, env + "/targets/x86_64-linux/include");
}

// The recipe's explicit request wins over an inherited CUDA_HOME, which still wins over discovery.
TEST(CudaLayouts, RecipesRequestWinsOverAnInheritedCudaHome) {
  Debian d;
  install_nvidia(d.fake.fs);
  d.fake.env.set("CUDA_HOME", "/usr/local/cuda");
  auto r = choose(discover(d.fake.machine(), std::nullopt), "11.8", d.fake.env);
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->chosen->root, "/usr");
  const Candidate* nv = d.at(*r, "/usr/local/cuda-13.0");
  ASSERT_TRUE(nv);
  EXPECT_EQ(nv->said(), "not chosen: [cuda] version = \"11.8\" in the recipe wins over CUDA_HOME (CUDA 13.0)");
  bool said = false;
  for (auto& w : r->warnings)
    said = said || w.starts_with("CUDA_HOME=/usr/local/cuda (CUDA 13.0) is not used: [cuda] version = \"11.8\"");
  EXPECT_TRUE(said);
  auto a = choose(discover(d.fake.machine(), std::nullopt), "auto", d.fake.env);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->chosen->root, "/usr/local/cuda-13.0");
  d.fake.env.set("CUDA_HOME", "/usr");
  auto b = choose(discover(d.fake.machine(), std::nullopt), "auto", d.fake.env);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->chosen->root, "/usr");  // auto: CUDA_HOME decides over the newest found
}

// Debian's own bin/gcc and bin/g++ beside the real nvcc (first on nvcc's PATH through
// nvcc.profile) run the first installed of a list: recognised, and named by the host compiler
// choice, which says whether it agrees. Trixie: gcc 14 the default, gcc 13 beside it.
TEST(CudaLayouts, TheToolkitsOwnCompilerWrapper) {
  auto d12 = compiler::parse_compiler_wrapper(data("cuda_layouts/debian12/bin-g++"));
  ASSERT_FALSE(d12.empty());
  EXPECT_EQ(d12.front(), "g++-11");
  EXPECT_EQ(d12.back(), "g++-6");
  auto d13 = compiler::parse_compiler_wrapper(data("cuda_layouts/debian13/bin-gcc"));
  ASSERT_GE(d13.size(), 2u);
  EXPECT_EQ(d13[0], "gcc-13");
  EXPECT_EQ(d13[1], "gcc-12");
  EXPECT_TRUE(compiler::parse_compiler_wrapper(data("cuda_layouts/debian13/usr-bin-nvcc")).empty());
  EXPECT_TRUE(compiler::parse_compiler_wrapper("prog=g++-11\nexec $prog \"$@\"\n").empty());  // no #!

  Debian d("debian13");
  for (auto n : {"gcc-14", "g++-14", "gcc-13", "g++-13"}) d.fake.fs.add_file(std::string("/usr/bin/") + n, "", 0755);
  d.fake.fs.add_symlink("/usr/bin/gcc", "gcc-14");
  d.fake.fs.add_symlink("/usr/bin/g++", "g++-14");
  d.fake.proc.on({"/usr/bin/gcc"}, {0, 0, false, "14.2.0\n", ""});
  d.fake.proc.on({"/usr/bin/gcc-14"}, {0, 0, false, "14.2.0\n", ""});
  d.fake.proc.on({"/usr/bin/gcc-13"}, {0, 0, false, "13.4.0\n", ""});
  auto r = discover(d.fake.machine(), std::nullopt);
  const Toolkit& tk = *d.at(r, "/usr")->toolkit;
  auto w = compiler::toolkit_wrapper(d.fake.machine(), tk);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->path, "/usr/lib/nvidia-cuda-toolkit/bin/gcc");
  EXPECT_EQ(w->runs, "gcc-13");
  EXPECT_EQ(compiler::wrapper_text(*w),
            "its own wrapper /usr/lib/nvidia-cuda-toolkit/bin/gcc runs gcc-13 (the first installed of gcc-13, "
            "gcc-12, gcc-11, ...)");
  auto hc = compiler::resolve(d.fake.machine(), tk, "auto", false, "/tmp/shim");
  ASSERT_TRUE(hc) << hc.error().render();
  EXPECT_EQ(hc->compiler.cc, "/usr/bin/gcc-13");
  EXPECT_NE(hc->reason.find("the default g++ (gcc 14.2.0) is too new; using the newest accepted g++-13 (gcc 13.4.0)"),
            std::string::npos)
      << hc->reason;
  EXPECT_NE(hc->reason.find("runs gcc-13 (the first installed of gcc-13, gcc-12, gcc-11, ...): the same compiler"),
            std::string::npos)
      << hc->reason;
  // A compiler asked for by name that the wrapper would not run: -ccbin decides.
  d.fake.fs.add_file("/usr/bin/gcc-12", "", 0755);
  d.fake.fs.add_file("/usr/bin/g++-12", "", 0755);
  d.fake.proc.on({"/usr/bin/gcc-12"}, {0, 0, false, "12.4.0\n", ""});
  auto named = compiler::resolve(d.fake.machine(), tk, "gcc-12", false, "/tmp/shim");
  ASSERT_TRUE(named) << named.error().render();
  EXPECT_NE(named->reason.find("runs gcc-13 (the first installed of gcc-13, gcc-12, gcc-11, ...); opforge's -ccbin "
                               "decides instead"),
            std::string::npos)
      << named->reason;
  // Nothing it lists is installed: it says so.
  Debian bare("debian13");
  auto rb = discover(bare.fake.machine(), std::nullopt);
  auto wb = compiler::toolkit_wrapper(bare.fake.machine(), *bare.at(rb, "/usr")->toolkit);
  ASSERT_TRUE(wb);
  EXPECT_FALSE(wb->runs);
  EXPECT_NE(compiler::wrapper_text(*wb).find("none is installed: nvcc without -ccbin fails"), std::string::npos);
}

}  // namespace
}  // namespace opforge::cuda

namespace opforge::compiler {
namespace {

TEST(CompilerFlags, TheTableAgainstEachNvccTriedHere) {
  const Version v118{11, 8, 0}, v124{12, 4, 0}, v130{13, 0, 0};
  for (auto f : {"-frandom-seed", "--compress-mode"}) {
    EXPECT_FALSE(accepts(Tool::nvcc, f, v118)) << f;
    EXPECT_FALSE(accepts(Tool::nvcc, f, v124)) << f;
    EXPECT_TRUE(accepts(Tool::nvcc, f, v130)) << f;
  }
  for (auto f : {"--threads", "-Xcicc=--orig_src_path_name", "-Xcudafe=--orig_src_path_name", "-Xcompiler"})
    for (auto v : {v118, v124, v130}) EXPECT_TRUE(accepts(Tool::nvcc, f, v)) << f << " " << v.str();
  for (const auto& row : flag_table()) {
    EXPECT_FALSE(row.source.empty()) << row.flag;
    EXPECT_FALSE(row.why.empty()) << row.flag;
  }
  EXPECT_FALSE(accepts(Tool::gcc, "-ffile-prefix-map", Version{7, 5, 0}));
  EXPECT_TRUE(accepts(Tool::gcc, "-ffile-prefix-map", Version{11, 3, 0}));
}

}  // namespace
}  // namespace opforge::compiler
