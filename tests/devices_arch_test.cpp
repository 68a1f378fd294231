#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "devices/resolve.h"
#include "probe/fake_machine.h"
#include "test_util.h"

namespace opforge::devices {
namespace {

using test_util::data;

std::string joined(const std::vector<target::Arch>& v) { return target::arch_list_str(v); }

TEST(DevicesParse, NvidiaSmiAndListGpuArch) {
  auto g = parse_nvidia_smi(data("nvidia_smi/two-kinds.csv"));
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[2].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g[2].major, 9);
  EXPECT_EQ(g[0].uuid, "GPU-4b1c8e2a-1111-2222-3333-444455556666");
  auto one = parse_nvidia_smi(data("nvidia_smi/one.csv"));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].minor, 6);
  auto acc = parse_list_gpu_arch(data("nvcc/13.0-list-gpu-arch.txt"));
  EXPECT_EQ(joined(acc), "7.5;8.0;8.6;8.7;8.8;8.9;9.0;10.0;10.3;11.0;12.0;12.1");
  EXPECT_EQ(joined(table_accepted(Version{13, 0})), joined(acc));
}

struct Gpus {
  probe::FakeMachine fm;
  cuda::Toolkit tk;
  Gpus() {
    tk.root = "/usr/local/cuda-13.0";
    tk.nvcc = "/usr/local/cuda-13.0/bin/nvcc";
    tk.version = {13, 0};
    fm.proc.on({"/usr/local/cuda-13.0/bin/nvcc", "--list-gpu-arch"},
               {0, 0, false, data("nvcc/13.0-list-gpu-arch.txt"), ""});
  }
  void smi(const std::string& file) { fm.proc.on({"nvidia-smi"}, {0, 0, false, data(file), ""}); }
};

TEST(DevicesResolve, GpusUnionSortedPtxOnLast) {
  Gpus w;
  w.smi("nvidia_smi/two-kinds.csv");
  auto d = resolve(w.fm.machine(), w.tk, "auto", "8.0");
  ASSERT_TRUE(d) << d.error().render();
  EXPECT_EQ(d->str(), "8.0;9.0+PTX");
  EXPECT_EQ(d->source, "GPUs");
  EXPECT_EQ(d->gpu_reader, "nvidia-smi");
  EXPECT_EQ(d->gpus.size(), 3u);
}

TEST(DevicesResolve, CudaVisibleDevicesFiltersNvidiaSmi) {
  Gpus w;
  w.smi("nvidia_smi/two-kinds.csv");
  w.fm.env.set("CUDA_VISIBLE_DEVICES", "2");
  auto d = resolve(w.fm.machine(), w.tk, "auto", "8.0");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->str(), "9.0+PTX");
  w.fm.env.set("CUDA_VISIBLE_DEVICES", "GPU-7d2e");
  EXPECT_EQ(resolve(w.fm.machine(), w.tk, "auto", "8.0")->str(), "8.0+PTX");
  w.fm.env.set("CUDA_VISIBLE_DEVICES", "");
  auto none = resolve(w.fm.machine(), w.tk, "auto", "8.6");
  EXPECT_EQ(none->source, "fallback");
}

TEST(DevicesResolve, NoGpuUsesFallbackAndSaysSo) {
  Gpus w;
  auto d = resolve(w.fm.machine(), w.tk, "auto", "7.0;8.0;8.6;9.0+PTX");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->source, "fallback");
  EXPECT_EQ(d->str(), "8.0;8.6;9.0+PTX");
  ASSERT_EQ(d->dropped.size(), 1u);
  EXPECT_EQ(d->dropped[0].first, "7.0");
  EXPECT_EQ(d->dropped[0].second, "nvcc 13.0 does not accept sm_70");
  ASSERT_FALSE(d->notes.empty());
  EXPECT_NE(d->notes[0].find("fallback"), std::string::npos);
}

TEST(DevicesResolve, TheListHandedOverDecidesAndTheEnvironmentIsNotRead) {
  // TORCH_CUDA_ARCH_LIST is read once, by plan::make (settings::arch_list), and handed over.
  Gpus w;
  w.fm.env.set("TORCH_CUDA_ARCH_LIST", "Hopper");
  auto d = resolve(w.fm.machine(), w.tk, "8.0", "8.6");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->source, "recipe [arch] list");
  EXPECT_EQ(d->str(), "8.0");
  auto named = resolve(w.fm.machine(), w.tk, "Hopper", "8.6");
  ASSERT_TRUE(named);
  EXPECT_EQ(named->str(), "9.0+PTX");
  auto bad = resolve(w.fm.machine(), w.tk, "8.6;;9.0", "8.6");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(bad.error().message, "empty entry in the arch list");
  EXPECT_EQ(resolve(w.fm.machine(), w.tk, "8.0;9.0a", "8.6")->str(), "8.0;9.0a");
}

TEST(DevicesResolve, NothingAcceptedIsUnsatisfied) {
  Gpus w;
  auto d = resolve(w.fm.machine(), w.tk, "6.0;7.0", "8.6");
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().kind, ErrorKind::unsatisfied);
}

// The driver API through fake symbols: two GPUs, 8.6 and 8.9.
extern "C" int fake_init(unsigned) { return 0; }
extern "C" int fake_count(int* n) {
  *n = 2;
  return 0;
}
extern "C" int fake_get(int* d, int i) {
  *d = i;
  return 0;
}
extern "C" int fake_attr(int* v, int a, int d) {
  *v = a == 75 ? 8 : (d == 0 ? 6 : 9);
  return 0;
}
extern "C" int fake_name(char* b, int, int d) {
  std::snprintf(b, 64, "GPU%d", d);
  return 0;
}

TEST(DevicesReadGpus, DriverApi) {
  Gpus w;
  w.fm.dl.add_library("libcuda.so.1", {{"cuInit", (void*)&fake_init},
                                       {"cuDeviceGetCount", (void*)&fake_count},
                                       {"cuDeviceGet", (void*)&fake_get},
                                       {"cuDeviceGetAttribute", (void*)&fake_attr},
                                       {"cuDeviceGetName", (void*)&fake_name}});
  std::string reader;
  auto g = read_gpus(w.fm.machine(), reader);
  EXPECT_EQ(reader, "driver API");
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[1].name, "GPU1");
  EXPECT_EQ(g[1].minor, 9);
  EXPECT_EQ(w.fm.dl.opened(), (std::vector<std::string>{"libcuda.so.1"}));
  auto d = resolve(w.fm.machine(), w.tk, "auto", "8.0");
  EXPECT_EQ(d->str(), "8.6;8.9+PTX");
  EXPECT_FALSE(d->notes.empty());  // several generations
}

TEST(DevicesRealMachine, AcceptedByRealNvcc) {
  auto m = probe::real_machine();
  if (!m.fs.is_executable("/usr/local/cuda-13.0/bin/nvcc")) GTEST_SKIP() << "nvcc 13.0 is not available";
  cuda::Toolkit tk;
  tk.nvcc = "/usr/local/cuda-13.0/bin/nvcc";
  tk.version = {13, 0};
  auto acc = accepted_by(m, tk);
  EXPECT_NE(std::find(acc.begin(), acc.end(), target::Arch{9, 0, 'a'}), acc.end());
  EXPECT_EQ(std::find(acc.begin(), acc.end(), target::Arch{7, 0}), acc.end());
}

}  // namespace
}  // namespace opforge::devices

namespace opforge::devices {
namespace {

TEST(DevicesResolve, PtxMovesWhenItsEntryIsDropped) {
  probe::FakeMachine fm;
  cuda::Toolkit tk;
  tk.version = {11, 8};  // no nvcc path: the table answers
  auto d = resolve(fm.machine(), tk, "8.0;10.0+PTX", "8.6");
  ASSERT_TRUE(d) << d.error().render();
  EXPECT_EQ(d->str(), "8.0+PTX");
  ASSERT_EQ(d->dropped.size(), 1u);
  EXPECT_EQ(d->dropped[0].second, "nvcc 11.8 does not accept sm_100");
  EXPECT_EQ(d->notes.back(), "+PTX moved to 8.0+PTX because the entry carrying it was dropped");
}

}  // namespace
}  // namespace opforge::devices
