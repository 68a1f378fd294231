// Test kernels: known fp16/bf16/fp32 numerics produced by real GPU arithmetic.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>

#include "overflow.h"

namespace opforge_overflow {
int set_error(int code, const char* message);
}

// Named, not anonymous: see stats.cu (nvcc hashes the absolute path into anonymous names).
namespace opforge_overflow_test_detail {

__device__ __forceinline__ unsigned long long mix(unsigned long long z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
// Uniform in [0, 1) from (seed, i).
__device__ __forceinline__ float unit(unsigned long long seed, unsigned long long i) {
  return float(mix(seed * 0x100000001b3ull + i) >> 40) * (1.0f / 16777216.0f);
}

__global__ void fill_kernel(int which, void* out, unsigned long long n, unsigned long long index,
                            unsigned long long seed) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    const float u = unit(seed, i);
    switch (which) {
      case 1: {  // activation near the fp16 max, rescaled by 1/(1-p) like dropout in training
        const __half x = __float2half_rn(6.27e4f);
        const __half scale = __float2half_rn(1.0f / (1.0f - 0.1f));
        static_cast<__half*>(out)[i] = __hmul(x, scale);
        break;
      }
      case 2: {  // product fine in fp32 (9e4), inf in fp16
        const __half a = __float2half_rn(300.0f + u);
        static_cast<__half*>(out)[i] = __hmul(a, a);
        break;
      }
      case 3: {  // fp16 underflow: below 6.1e-05 becomes subnormal, below ~3e-08 zero
        const __half x = __float2half_rn(0.5f + 0.5f * u);
        static_cast<__half*>(out)[i] = __hmul(x, __float2half_rn(i % 2 ? 1e-6f : 1e-5f));
        break;
      }
      case 4: {  // bf16 underflow below 1.18e-38
        const __nv_bfloat16 x = __float2bfloat16_rn(0.5f + 0.5f * u);
        static_cast<__nv_bfloat16*>(out)[i] = __hmul(x, __float2bfloat16_rn(1e-39f));
        break;
      }
      case 5: {  // inf - inf
        volatile float big = 3.0e38f;
        const float inf = big * 10.0f;
        static_cast<float*>(out)[i] = inf - inf;
        break;
      }
      case 6:
      case 7: {
        float v = 2.0f * u - 1.0f;
        if (i == index) v = which == 6 ? __int_as_float(0x7fc00000) : -__int_as_float(0x7f800000);
        static_cast<float*>(out)[i] = v;
        break;
      }
    }
  }
}

}  // namespace opforge_overflow_test_detail
using namespace opforge_overflow_test_detail;

extern "C" int opforge_overflow_cuda_test_kernel(int which, void* out, uint64_t n, uint64_t index, uint64_t seed,
                                                 int* dtype_out, void* stream) {
  static const int dtypes[] = {-1,
                               OPFORGE_OVERFLOW_F16,
                               OPFORGE_OVERFLOW_F16,
                               OPFORGE_OVERFLOW_F16,
                               OPFORGE_OVERFLOW_BF16,
                               OPFORGE_OVERFLOW_F32,
                               OPFORGE_OVERFLOW_F32,
                               OPFORGE_OVERFLOW_F32};
  if (which < 1 || which > 7) return opforge_overflow::set_error(OPFORGE_OVERFLOW_EINVAL, "unknown test case");
  if (dtype_out) *dtype_out = dtypes[which];
  if (n == 0) return 0;
  // The kernel stores whole elements: a pointer off the element size faults on the GPU
  // (misaligned address) and poisons the context for every later call in the process.
  const uintptr_t size = dtypes[which] == OPFORGE_OVERFLOW_F32 ? 4 : 2;
  if (reinterpret_cast<uintptr_t>(out) % size != 0)
    return opforge_overflow::set_error(OPFORGE_OVERFLOW_EINVAL, "output not aligned to the element size");
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0) return opforge_overflow::set_error(OPFORGE_OVERFLOW_ENODEV, "no CUDA device");
  const unsigned long long blocks = (n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096;
  fill_kernel<<<unsigned(blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(which, out, n, index, seed);
  e = cudaGetLastError();
  if (e != cudaSuccess) return opforge_overflow::set_error(OPFORGE_OVERFLOW_ECUDA, cudaGetErrorString(e));
  return 0;
}
