// doctor's report rendered as text, exactly, from a report built by hand and from doctor::examine
// on an empty fake machine.
#include "doctor/render.h"

#include <gtest/gtest.h>

#include "probe/fake_machine.h"

namespace opforge::doctor {
namespace {

Report a_machine() {
  Report r;
  r.python = "python3";
  cuda::TorchInfo torch;
  torch.python = "python3";
  torch.torch_version = "2.15.0+cu132";
  torch.cuda = Version{13, 2};
  torch.site_packages = "/venv/lib/python3.11/site-packages";
  torch.torch_dir = "/venv/lib/python3.11/site-packages/torch";
  r.torch = torch;
  r.compilers.push_back({compiler::Family::gcc, "/usr/bin/gcc", "/usr/bin/g++", Version{12, 2, 0}, true});
  r.compilers.push_back({compiler::Family::gcc, "/usr/bin/gcc-11", "/usr/bin/g++-11", Version{11, 3, 0}, false});
  ToolkitReport tk;
  tk.candidate.path = "/usr/local/cuda-13.0";
  tk.candidate.found_by = "/usr/local/cuda-*";
  tk.candidate.verdict = cuda::Verdict::chosen;
  tk.candidate.why = "the newest valid toolkit";
  cuda::Toolkit t;
  t.root = "/usr/local/cuda-13.0";
  t.version = Version{13, 0};
  t.version_source = "nvcc --version";
  t.real_nvcc = "/usr/local/cuda-13.0/bin/nvcc";
  t.include_dir = "/usr/local/cuda-13.0/include";
  t.lib_dir = "/usr/local/cuda-13.0/lib";
  tk.candidate.toolkit = t;
  tk.limits = compiler::Limits{15, 20, "/usr/local/cuda-13.0/targets/x86_64-linux/include/crt/host_config.h"};
  tk.accepts = {"gcc", "gcc-11"};
  r.toolkits.push_back(tk);
  ToolkitReport bad;
  bad.candidate.path = "/opt/cuda";
  bad.candidate.found_by = "/opt/cuda*";
  bad.candidate.verdict = cuda::Verdict::rejected;
  bad.candidate.why = "no bin/nvcc";
  r.toolkits.push_back(bad);
  r.gpu_reader = "driver API (libcuda.so.1)";
  r.gpus.push_back({0, "NVIDIA H100 80GB HBM3", 9, 0, "GPU-1"});
  r.ninja = ToolReport{"/usr/bin/ninja", "1.11.1"};
  r.kernel = "6.1.0-27-amd64";
  r.node = {.host = "gpu01",
            .machine = "x86_64",
            .glibc_minor = 36,
            .glibcxx = "3.4.30",
            .cxxabi = "1.3.14",
            .cpu_level = 4,
            .driver_version = "580.65.06",
            .driver_cuda = "13.0"};
  ops::Decision aio;
  aio.manifest.name = "aio";
  aio.status = ops::OpStatus::skipped;
  aio.requested_by = "recipe: auto";
  aio.reason = "libaio not found: apt-get install libaio-dev";
  r.ops.push_back(aio);
  ops::Decision adam;
  adam.manifest.name = "cpu_adam";
  adam.status = ops::OpStatus::build;
  adam.requested_by = "DS_BUILD_CPU_ADAM=1";
  adam.reason = "compatible";
  r.ops.push_back(adam);
  r.libaio = "libaio.so.1";
  r.warnings = {"torch's CUDA 13.2 differs from the toolkit's 13.0 in the minor version"};
  return r;
}

// A recipe's sccache scheduler: what it has now, and what a build will do (JSON for the nodes' tools).
TEST(DoctorRender, TheRecipesScheduler) {
  auto r = a_machine();
  r.sccache = doctor::ToolReport{.path = "/opt/tools/bin/sccache", .version = "sccache 0.16.0"};
  r.scheduler =
      doctor::SchedulerAnswer{.url = "http://10.0.0.1:10600",
                              .state = "connected",
                              .servers = 16,
                              .cpus = 512,
                              .said = "16 build servers, 512 CPUs at http://10.0.0.1:10600: compile steps go there"};
  const auto j = to_json(r);
  EXPECT_EQ(j["scheduler"]["servers"], 16);
  EXPECT_EQ(j["scheduler"]["state"], "connected");
  const auto text = to_text(j);
  EXPECT_NE(
      text.find("sccache: /opt/tools/bin/sccache sccache 0.16.0\n"
                "sccache scheduler: 16 build servers, 512 CPUs at http://10.0.0.1:10600: compile steps go there\n"),
      std::string::npos)
      << text;
}

TEST(DoctorRender, TextOfAFullReport) {
  EXPECT_EQ(to_text(to_json(a_machine())),
            "torch (python3): CUDA 13.2 (torch 2.15.0+cu132)\n"
            "\n"
            "CUDA toolkits:\n"
            "  * /usr/local/cuda-13.0  CUDA 13.0 [nvcc --version]  (/usr/local/cuda-*)\n"
            "      chosen: the newest valid toolkit\n"
            "      layout: NVIDIA (nvcc /usr/local/cuda-13.0/bin/nvcc, cuda.h in /usr/local/cuda-13.0/include, "
            "libcudart in /usr/local/cuda-13.0/lib)\n"
            "      accepts gcc <= 15, clang <= 20 (/usr/local/cuda-13.0/targets/x86_64-linux/include/crt/"
            "host_config.h); installed accepted: gcc, gcc-11\n"
            "    /opt/cuda  (/opt/cuda*)\n"
            "      rejected: no bin/nvcc\n"
            "\n"
            "Host compilers:\n"
            "  /usr/bin/g++  gcc 12.2.0  (default)\n"
            "  /usr/bin/g++-11  gcc 11.3.0\n"
            "\n"
            "GPUs (driver API (libcuda.so.1)):\n"
            "  0: NVIDIA H100 80GB HBM3 (9.0)\n"
            "\n"
            "libaio: libaio.so.1\n"
            "ninja: /usr/bin/ninja 1.11.1\n"
            "ccache: not found\n"
            "sccache: not found\n"
            "kernel: 6.1.0-27-amd64\n"
            "node gpu01: x86_64, glibc 2.36, libstdc++ GLIBCXX_3.4.30, x86-64-v4, NVIDIA driver 580.65.06 (CUDA 13.0)\n"
            "\n"
            "Ops:\n"
            "  aio: skipped (recipe: auto) libaio not found: apt-get install libaio-dev\n"
            "  cpu_adam: build (DS_BUILD_CPU_ADAM=1) compatible\n"
            "\n"
            "Warnings:\n"
            "  torch's CUDA 13.2 differs from the toolkit's 13.0 in the minor version\n");
}

TEST(DoctorRender, JsonOfAFullReport) {
  auto j = to_json(a_machine());
  EXPECT_EQ(j["torch"]["cuda"], "13.2");
  EXPECT_EQ(j["torch"]["location"], "/venv/lib/python3.11/site-packages/torch");
  EXPECT_EQ(j["toolkits"][0]["accepts"], nlohmann::json::array({"gcc", "gcc-11"}));
  EXPECT_EQ(j["toolkits"][0]["max_gcc"], 15);
  EXPECT_EQ(j["toolkits"][0]["layout"], "NVIDIA");
  EXPECT_EQ(j["toolkits"][0]["lib_dir"], "/usr/local/cuda-13.0/lib");
  EXPECT_FALSE(j["toolkits"][1].contains("version"));
  EXPECT_EQ(j["compilers"][1]["family"], "gcc");
  EXPECT_EQ(j["compilers"][1]["version"], "11.3.0");
  EXPECT_EQ(j["gpus"]["devices"][0]["capability"], "9.0");
  EXPECT_EQ(j["ccache"]["path"], nullptr);
  EXPECT_EQ(j["ops"][1], (nlohmann::json{{"name", "cpu_adam"},
                                         {"requested_by", "DS_BUILD_CPU_ADAM=1"},
                                         {"build", true},
                                         {"status", "build"},
                                         {"reason", "compatible"}}));
}

/// A machine with nothing on it: no Python, no toolkit, no compiler, no GPU, no tool, no recipe.
TEST(DoctorExamine, AnEmptyMachineSaysWhatIsMissing) {
  probe::FakeMachine fm;
  auto report = examine(fm.machine(), "python3", "/nonexistent/recipe.toml");
  EXPECT_FALSE(report.torch);
  for (const auto& t : report.toolkits) EXPECT_FALSE(t.candidate.toolkit) << t.candidate.path;  // looked at, invalid
  EXPECT_TRUE(report.compilers.empty());
  EXPECT_TRUE(report.gpus.empty());
  EXPECT_FALSE(report.ninja);
  EXPECT_FALSE(report.libaio);
  ASSERT_TRUE(report.cuda_error);
  ASSERT_TRUE(report.ops_error);
  const std::string text = to_text(to_json(report));
  EXPECT_TRUE(text.starts_with("torch (python3): cannot run python3\n\nCUDA toolkits:\n  ")) << text;
  EXPECT_NE(text.find("\nHost compilers:\n\nGPUs: none ("), std::string::npos) << text;
  EXPECT_EQ(text.find("GPUs: none (none"), std::string::npos) << text;
  EXPECT_NE(text.find(")\n\nlibaio: not found\nninja: not found\nccache: not found\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nOps:\n  "), std::string::npos) << text;
  // Cross-builds: the cross compiler, strip, libaio and the emulator missing, and the packages
  // that add them (Debian's arm64 archive first); the Python's rows need a Python that answered.
  EXPECT_NE(text.find("\nCross-builds for aarch64 ([build] platform, --platform):\n"
                      "  C++ compiler: missing aarch64-linux-gnu-g++ (g++-aarch64-linux-gnu)  — every cross-build for "
                      "aarch64 (nvcc's host compiler too)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  to add what is missing: dpkg --add-architecture arm64 && apt-get update && apt-get install "
                      "binutils-aarch64-linux-gnu g++-aarch64-linux-gnu libaio-dev:arm64 qemu-user-static\n"),
            std::string::npos)
      << text;
  // Every process it tried is a question, never a change: nothing was written.
  EXPECT_TRUE(fm.fs.log().empty());
}

}  // namespace
}  // namespace opforge::doctor
