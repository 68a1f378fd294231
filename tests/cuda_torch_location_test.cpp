// torch is found where `import torch` would load it from (importlib.util.find_spec, which imports
// nothing): PYTHONPATH and .pth files included, with the real /usr/bin/python3.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cuda/mismatch.h"
#include "cuda/resolve.h"
#include "probe/machine.h"

namespace sfs = std::filesystem;
using namespace opforge;

namespace {

const sfs::path kElsewhere = sfs::path(OPFORGE_TEST_FIXTURES) / "torch_elsewhere";

// Runs processes for real with extra environment variables (the caller's environment otherwise).
struct EnvRunner final : probe::ProcessRunner {
  std::map<std::string, std::string> extra;
  Result<probe::ProcessResult> run(const probe::Command& c) override {
    probe::Command copy = c;
    auto env = probe::real_machine().env.all();
    for (auto& [k, v] : extra) env[k] = v;
    copy.env = env;
    return probe::real_machine().proc.run(copy);
  }
};

}  // namespace

TEST(CudaTorchLocation, ParsesTheProbeOutput) {
  auto p = cuda::parse_python_probe(
      R"({"torch": "/x/torch/__init__.py", "locations": ["/x/torch"], "path": ["", "/x"], "cflags": "-O2"})");
  EXPECT_TRUE(p.ok);
  EXPECT_EQ(p.torch_origin, "/x/torch/__init__.py");
  EXPECT_EQ(p.torch_locations, (std::vector<sfs::path>{"/x/torch"}));
  EXPECT_EQ(p.cflags, "-O2");
  EXPECT_FALSE(cuda::parse_python_probe("Traceback (most recent call last):").ok);
}

TEST(CudaTorchLocation, FoundThroughPythonpath) {
  auto real = probe::real_machine();
  EnvRunner runner;
  runner.extra = {{"PYTHONPATH", kElsewhere.string()}};
  auto t = cuda::read_torch(probe::Machine{real.fs, runner, real.env, real.dl}, "/usr/bin/python3");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->torch_version, "2.15.0+cu132");
  EXPECT_EQ(t->cuda, (Version{13, 2}));
  EXPECT_EQ(t->torch_dir, kElsewhere / "torch");
  EXPECT_FALSE(t->python_cflags.empty());  // sysconfig's CFLAGS, kept under the build's own
}

TEST(CudaTorchLocation, FoundThroughAPthFile) {
  auto real = probe::real_machine();
  auto base = sfs::temp_directory_path() / ("opforge-pth-" + std::to_string(::getpid()));
  sfs::remove_all(base);
  // The user site of PYTHONUSERBASE is processed like site-packages: its .pth lines join sys.path.
  auto r = real.proc.run(probe::Command{
      .argv = {"/usr/bin/python3", "-c", "import site; print(site.USER_SITE)"},
      .env = std::map<std::string, std::string>{{"PYTHONUSERBASE", base.string()}, {"PATH", "/usr/bin:/bin"}}});
  ASSERT_TRUE(r && r->ok());
  sfs::path user_site(std::string(r->out.substr(0, r->out.find('\n'))));
  sfs::create_directories(user_site);
  std::ofstream(user_site / "elsewhere.pth") << kElsewhere.string() << "\n";
  EnvRunner runner;
  runner.extra = {{"PYTHONUSERBASE", base.string()}};
  auto t = cuda::read_torch(probe::Machine{real.fs, runner, real.env, real.dl}, "/usr/bin/python3");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->torch_version, "2.15.0+cu132");
  EXPECT_EQ(t->torch_dir, kElsewhere / "torch");
  sfs::remove_all(base);
}

TEST(CudaTorchLocation, MajorMismatchIsAnErrorMinorAWarningNamingBoth) {
  cuda::TorchInfo torch;
  torch.python = "python";
  torch.cuda = Version{13, 2};
  cuda::Toolkit tk;
  tk.root = "/usr/local/cuda-13.0";
  tk.version = Version{13, 0};
  auto minor = cuda::torch_match(torch, tk);
  EXPECT_EQ(minor.mismatch, cuda::Mismatch::minor);
  EXPECT_NE(minor.message.find("CUDA 13.0 differs from torch's CUDA 13.2"), std::string::npos) << minor.message;
  EXPECT_NE(minor.message.find("DS_SKIP_CUDA_CHECK=1"), std::string::npos);
  tk.version = Version{12, 8};
  EXPECT_EQ(cuda::torch_match(torch, tk).mismatch, cuda::Mismatch::major);
  tk.version = Version{13, 2};
  EXPECT_EQ(cuda::torch_match(torch, tk).mismatch, cuda::Mismatch::none);
}
