#include <gtest/gtest.h>

#include "cuda/provision.h"
#include "probe/fake_machine.h"
#include "test_util.h"

namespace opforge::cuda {
namespace {

using test_util::data;

TEST(CudaProvision, RequirementIsTorchsExactPin) {
  // torch 2.15.0's METADATA requires cuda-toolkit[...]==13.2.2 (its CUDA 13.2).
  EXPECT_EQ(toolkit_requirement(data("torch/2.15.0-METADATA.txt"), Version{13, 2, 0}),
            "cuda-toolkit[nvcc,cudart,cccl]==13.2.2");
}

TEST(CudaProvision, Torch214PinsTheMachinesCuda130) {
  EXPECT_EQ(toolkit_requirement(data("torch/2.14.0-METADATA.txt"), Version{13, 0, 0}),
            "cuda-toolkit[nvcc,cudart,cccl]==13.0.3");
}

TEST(CudaProvision, RequirementFallsBackToMajorMinor) {
  // No METADATA (an editable torch), or a pin of another CUDA: any release of that major.minor.
  EXPECT_EQ(toolkit_requirement("", Version{13, 2, 0}), "cuda-toolkit[nvcc,cudart,cccl]==13.2.*");
  EXPECT_EQ(toolkit_requirement(data("torch/2.15.0-METADATA.txt"), Version{13, 0, 0}),
            "cuda-toolkit[nvcc,cudart,cccl]==13.0.*");
  EXPECT_EQ(toolkit_requirement("Requires-Dist: cuda-toolkit[cudart]==13.0.3\n", Version{13, 0, 0}),
            "cuda-toolkit[nvcc,cudart,cccl]==13.0.3");
  EXPECT_EQ(toolkit_requirement("Requires-Dist: cuda-toolkit==13.1.*\n", Version{13, 1, 0}),
            "cuda-toolkit[nvcc,cudart,cccl]==13.1.*");
}

TEST(CudaProvision, NoNvccOnPyPIBeforeCuda13) {
  EXPECT_TRUE(check_provisionable(Version{13, 2, 0}));
  for (auto v : {Version{12, 8, 0}, Version{11, 8, 0}}) {
    auto r = check_provisionable(v);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, ErrorKind::unsatisfied);
    EXPECT_NE(r.error().message.find("only ptxas"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().hint.find("install CUDA " + v.str()), std::string::npos);
  }
}

TorchInfo torch_215(const std::string& site) {
  TorchInfo t;
  t.python = "/venv/bin/python";
  t.torch_version = "2.15.0+cu132";
  t.cuda = Version{13, 2, 0};
  t.site_packages = site;
  t.torch_dir = site + "/torch";
  return t;
}

TEST(CudaProvision, DescribeReadsOnly) {
  probe::FakeMachine w;
  const std::string site = "/venv/lib/python3.11/site-packages";
  w.fs.add_file(site + "/torch-2.15.0.dist-info/METADATA", data("torch/2.15.0-METADATA.txt"));
  auto p = describe_provision(w.machine(), torch_215(site), "/cache");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->requirement, "cuda-toolkit[nvcc,cudart,cccl]==13.2.2");
  EXPECT_EQ(p->requirement_source, "torch-2.15.0.dist-info/METADATA");
  EXPECT_EQ(p->dir, "/cache/toolkits/13.2");
  EXPECT_FALSE(p->present);
  EXPECT_TRUE(w.fs.log().empty());
  EXPECT_TRUE(w.proc.calls().empty());
}

TEST(CudaProvision, PresentFolderIsReusedWithoutPip) {
  probe::FakeMachine w;
  const std::string site = "/venv/lib/python3.11/site-packages";
  w.fs.add_file("/cache/toolkits/13.2/bin/nvcc", "", 0755);
  w.fs.add_file("/cache/toolkits/13.2/opforge-toolkit.json",
                R"({"cuda": "13.2", "requirement": "cuda-toolkit[nvcc,cudart,cccl]==13.2.2",
                    "packages": [{"name": "nvidia-cuda-nvcc", "version": "13.2.86", "file": "f.whl",
                                  "sha256": "ab"}]})");
  auto p = provision(w.machine(), torch_215(site), "/cache");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_TRUE(p->present);
  EXPECT_FALSE(p->fetched);
  ASSERT_EQ(p->packages.size(), 1u);
  EXPECT_EQ(p->packages[0].name, "nvidia-cuda-nvcc");
  EXPECT_EQ(p->packages[0].sha256, "ab");
  EXPECT_TRUE(w.proc.calls().empty());
  auto all = list_provisioned(w.fs, "/cache");
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].cuda, (Version{13, 2, 0}));
}

TEST(CudaProvision, FailedDownloadLeavesNothingAndNamesThePackages) {
  probe::FakeMachine w;
  const std::string site = "/venv/lib/python3.11/site-packages";
  probe::ProcessResult refused;
  refused.exit_code = 1;
  refused.err = "ERROR: Could not find a version that satisfies the requirement cuda-toolkit==13.2.2\n";
  w.proc.on({"/venv/bin/python", "-m", "pip", "download"}, refused);
  auto p = provision(w.machine(), torch_215(site), "/cache");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().kind, ErrorKind::unsatisfied);
  EXPECT_NE(p.error().message.find("nvidia-cuda-nvcc"), std::string::npos) << p.error().message;
  EXPECT_NE(p.error().message.find("cuda-toolkit[nvcc,cudart,cccl]==13.2.*"), std::string::npos);
  for (auto& [path, node] : w.fs.nodes()) {
    EXPECT_EQ(path.find(".partial"), std::string::npos) << path;
    EXPECT_NE(path, "/cache/toolkits/13.2");
  }
}

TEST(CudaProvision, CpuOnlyTorchCannotProvision) {
  probe::FakeMachine w;
  TorchInfo t = torch_215("/site");
  t.cuda.reset();
  auto p = describe_provision(w.machine(), t, "/cache");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().kind, ErrorKind::unsatisfied);
}

}  // namespace
}  // namespace opforge::cuda
