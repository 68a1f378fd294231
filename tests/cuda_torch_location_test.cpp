// torch is found where `import torch` would load it from (importlib.util.find_spec, which imports
// nothing): PYTHONPATH and .pth files included, with the real /usr/bin/python3.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cuda/mismatch.h"
#include "cuda/resolve.h"
#include "probe/machine.h"
#include "probe/overlay_environment.h"
#include "test_util.h"

namespace sfs = std::filesystem;
using namespace opforge;

namespace {

const sfs::path kElsewhere = sfs::path(OPFORGE_TEST_FIXTURES) / "torch_elsewhere";

// Runs processes for real in the environment the machine reports (as the real runner's children
// inherit it), and counts them.
struct EnvRunner final : probe::ProcessRunner {
  explicit EnvRunner(const probe::Environment& e) : env(e) {}
  const probe::Environment& env;
  int runs = 0;
  Result<probe::ProcessResult> run(const probe::Command& c) override {
    ++runs;
    probe::Command copy = c;
    copy.env = env.all();
    return probe::real_machine().proc.run(copy);
  }
};

/// The real environment with `extra` set and the cache in a folder of the test's own, so that no
/// test reads or writes the user's cache.
probe::OverlayEnvironment env_with(std::map<std::string, std::string> extra, const sfs::path& cache) {
  extra["OPFORGE_CACHE_DIR"] = cache.string();
  return probe::OverlayEnvironment(probe::real_machine().env, std::move(extra));
}

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
  auto env = env_with({{"PYTHONPATH", kElsewhere.string()}}, test_util::temp_dir("torch-pythonpath"));
  EnvRunner runner(env);
  auto t = cuda::read_torch(probe::Machine{real.fs, runner, env, real.dl}, "/usr/bin/python3");
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
  auto env = env_with({{"PYTHONUSERBASE", base.string()}}, base / "cache");
  EnvRunner runner(env);
  auto t = cuda::read_torch(probe::Machine{real.fs, runner, env, real.dl}, "/usr/bin/python3");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->torch_version, "2.15.0+cu132");
  EXPECT_EQ(t->torch_dir, kElsewhere / "torch");
  sfs::remove_all(base);
}

TEST(CudaTorchLocation, TheAnswerIsRememberedUntilAFolderOnSysPathOrAVariableChanges) {
  auto real = probe::real_machine();
  const auto dir = test_util::temp_dir("torch-cache");
  sfs::remove_all(dir);
  sfs::create_directories(dir / "pp");
  auto env = env_with({{"PYTHONPATH", (dir / "pp").string()}}, dir / "cache");
  EnvRunner runner(env);
  probe::Machine m{real.fs, runner, env, real.dl};
  auto first = cuda::read_torch(m, "/usr/bin/python3");
  ASSERT_TRUE(first);
  EXPECT_EQ(runner.runs, 1);
  EXPECT_TRUE(sfs::exists(dir / "cache" / "python.json"));
  auto again = cuda::read_torch(m, "/usr/bin/python3");
  ASSERT_TRUE(again);
  EXPECT_EQ(runner.runs, 1);  // remembered: no python started
  EXPECT_EQ(again->torch_version, first->torch_version);
  EXPECT_EQ(again->torch_dir, first->torch_dir);
  EXPECT_EQ(again->python_cflags, first->python_cflags);

  // torch installed into a folder on sys.path: that folder changed, so python runs again and
  // finds it.
  sfs::create_symlink(kElsewhere / "torch", dir / "pp" / "torch");
  auto installed = cuda::read_torch(m, "/usr/bin/python3");
  ASSERT_TRUE(installed);
  EXPECT_EQ(runner.runs, 2);
  EXPECT_EQ(installed->torch_version, "2.15.0+cu132");
  EXPECT_EQ(installed->torch_dir, dir / "pp" / "torch");

  // Another PYTHONPATH is another question.
  auto other = env_with({{"PYTHONPATH", kElsewhere.string()}}, dir / "cache");
  EnvRunner other_runner(other);
  ASSERT_TRUE(cuda::read_torch(probe::Machine{real.fs, other_runner, other, real.dl}, "/usr/bin/python3"));
  EXPECT_EQ(other_runner.runs, 1);
  sfs::remove_all(dir);
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
  // PyTorch's rule in every project's words: DeepSpeed's variable only in a DeepSpeed tree's plan.
  EXPECT_EQ(minor.message,
            "CUDA 13.0 differs from torch's CUDA 13.2 in the minor version: accepted (PyTorch only warns)");
  tk.version = Version{12, 8};
  EXPECT_EQ(cuda::torch_match(torch, tk).mismatch, cuda::Mismatch::major);
  tk.version = Version{13, 2};
  EXPECT_EQ(cuda::torch_match(torch, tk).mismatch, cuda::Mismatch::none);
}
