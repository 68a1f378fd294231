// The stable C ABI's releases, read from the version guards of torch's headers.
#include <gtest/gtest.h>

#include <cstdlib>

#include "cuda/torch_stable.h"

using namespace opforge;

namespace {

// The shape of torch 2.15's torch/csrc/stable/version.h and stable/c/shim.h: release macros,
// then declarations inside version guards (a declaration may span lines), nested #ifdefs, and an
// #else branch that is older code.
constexpr const char* kVersionH = R"(
#define TORCH_VERSION_2_10_0 (((0ULL + 2) << 56) | ((0ULL + 10) << 48))
#define TORCH_VERSION_2_11_0 (((0ULL + 2) << 56) | ((0ULL + 11) << 48))
#define TORCH_VERSION_2_12_0 (((0ULL + 2) << 56) | ((0ULL + 12) << 48))
)";
constexpr const char* kShimH = R"(
#ifdef __cplusplus
extern "C" {
#endif
AOTI_TORCH_EXPORT AOTITorchError
aoti_torch_get_device_type(AtenTensorHandle tensor, int32_t* ret_device_type);
#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_10_0
AOTI_TORCH_EXPORT AOTITorchError torch_call_dispatcher(
    const char* opName,
    StableIValue* stack);
#ifdef USE_CUDA
AOTI_TORCH_EXPORT AOTITorchError
torch_get_current_cuda_blas_handle(void** ret_handle);
#endif // USE_CUDA
#endif // TORCH_FEATURE_VERSION >= TORCH_VERSION_2_10_0
#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_12_0
AOTI_TORCH_EXPORT int32_t torch_tag_core();
#else
AOTI_TORCH_EXPORT int32_t torch_legacy_tag();
#endif
#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_11_0
AOTI_TORCH_EXPORT AOTITorchError torch_from_blob(void* data, int64_t ndim);
#endif
)";

}  // namespace

TEST(CudaTorchStable, GuardsGiveEachFunctionItsRelease) {
  cuda::StableAbi abi;
  cuda::parse_stable_header(kVersionH, abi);
  cuda::parse_stable_header(kShimH, abi);
  ASSERT_TRUE(abi.oldest);
  EXPECT_EQ(*abi.oldest, (cuda::Release{2, 10}));
  EXPECT_EQ(abi.introduced.at("aoti_torch_get_device_type"), (cuda::Release{0, 0}));
  EXPECT_EQ(abi.introduced.at("torch_call_dispatcher"), (cuda::Release{2, 10}));
  EXPECT_EQ(abi.introduced.at("torch_get_current_cuda_blas_handle"), (cuda::Release{2, 10}));
  EXPECT_EQ(abi.introduced.at("torch_tag_core"), (cuda::Release{2, 12}));
  EXPECT_EQ(abi.introduced.at("torch_legacy_tag"), (cuda::Release{0, 0}));
  EXPECT_EQ(abi.introduced.at("torch_from_blob"), (cuda::Release{2, 11}));

  auto f = cuda::stable_floor(abi, {"aoti_torch_get_device_type"});
  ASSERT_TRUE(f.release);
  EXPECT_EQ(*f.release, (cuda::Release{2, 10}));  // unguarded: the oldest release the headers name
  f = cuda::stable_floor(abi, {"torch_from_blob", "torch_tag_core", "aoti_torch_get_device_type"});
  EXPECT_EQ(*f.release, (cuda::Release{2, 12}));
  EXPECT_EQ(f.decided_by, "torch_tag_core");
  f = cuda::stable_floor(abi, {"torch_from_blob", "torch_not_declared"});
  EXPECT_FALSE(f.release);
  EXPECT_EQ(f.missing, "torch_not_declared");
}

TEST(CudaTorchStable, TheTorchEnvironmentsHeaders) {
  // The real headers of torch 2.14 and 2.15 (scripts/torch-venv makes the environments).
  const char* home = std::getenv("HOME");
  const std::filesystem::path venv = std::filesystem::path(home ? home : "/root") / ".cache/opforge/torch-venv";
  const auto torch = venv / "lib/python3.11/site-packages/torch";
  if (!std::filesystem::exists(torch / "include")) GTEST_SKIP() << "no torch environment at " << venv;
  auto abi = cuda::read_stable_abi(probe::real_machine().fs, torch);
  ASSERT_TRUE(abi.oldest);
  EXPECT_EQ(*abi.oldest, (cuda::Release{2, 10}));
  EXPECT_GT(abi.introduced.size(), 100u);
  EXPECT_EQ(abi.introduced.at("aoti_torch_get_device_type"), (cuda::Release{0, 0}));
  EXPECT_EQ(abi.introduced.at("torch_call_dispatcher"), (cuda::Release{2, 10}));
  std::map<cuda::Release, int> per_release;
  for (const auto& [name, r] : abi.introduced) ++per_release[r];
  for (const auto& [r, n] : per_release) std::cout << r.first << "." << r.second << ": " << n << " functions\n";
}
