// GPU statistics: one fused pass per tensor list, results reduced in-device, read back once.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "dtype_traits.h"
#include "overflow.h"

namespace opforge_overflow {
int set_error(int code, const char* message);
uint64_t threshold_bits_for(int dtype, double t);  // stats_cpu.cpp: the CPU path's rule
}

// A named namespace, not an anonymous one: nvcc hashes the source file's absolute path into
// anonymous-namespace symbols, which would make the library depend on where the tree lives.
namespace opforge_overflow_stats_detail {

using opforge_overflow::Layout;
using opforge_overflow::layout_of;
using opforge_overflow::set_error;

constexpr int kThreads = 256;
constexpr int kMaxPerLaunch = 48;  // keeps the kernel parameter block well under 4 KiB

struct DevTensor {
  const unsigned char* data;
  unsigned long long count;
  unsigned long long abs_mask, finite_end, nan_begin, min_normal, threshold;
  int bytes, sign_shift;
  int block_begin, block_end;  // this tensor's share of the grid
};

struct Batch {
  DevTensor t[kMaxPerLaunch];
  int n;
};

struct Partial {
  unsigned long long nan, pinf, ninf, zero, sub, over, mn, mx;
};

__device__ __forceinline__ void classify(unsigned long long x, const DevTensor& d, Partial& p) {
  const unsigned long long a = x & d.abs_mask;
  const bool neg = (x >> d.sign_shift) & 1;
  const bool finite = a < d.finite_end;
  const bool inf = a >= d.finite_end && a < d.nan_begin;
  p.nan += a >= d.nan_begin;
  p.pinf += inf && !neg;
  p.ninf += inf && neg;
  p.zero += a == 0;
  p.sub += (a - 1) < (d.min_normal - 1);
  p.over += finite && a > d.threshold;
  if (finite) {
    p.mn = a < p.mn ? a : p.mn;
    p.mx = a > p.mx ? a : p.mx;
  }
}

template <class U>
__device__ __forceinline__ void scan_range(const DevTensor& d, unsigned long long begin,
                                           unsigned long long stride, Partial& p) {
  const U* base = reinterpret_cast<const U*>(d.data);
  // Elements before the first 16-byte boundary and after the last are done one by one.
  constexpr int kVec = 16 / sizeof(U);
  unsigned long long head = (16 - (reinterpret_cast<uintptr_t>(d.data) & 15)) & 15;
  head /= sizeof(U);
  if (reinterpret_cast<uintptr_t>(d.data) % sizeof(U) != 0) head = d.count;  // misaligned element type
  if (head > d.count) head = d.count;
  const unsigned long long nvec = (d.count - head) / kVec;
  const unsigned long long tail_begin = head + nvec * kVec;
  for (unsigned long long i = begin; i < head; i += stride) classify(base[i], d, p);
  const uint4* vec = reinterpret_cast<const uint4*>(base + head);
  for (unsigned long long v = begin; v < nvec; v += stride) {
    const uint4 w = __ldg(vec + v);
    const U* e = reinterpret_cast<const U*>(&w);
#pragma unroll
    for (int k = 0; k < kVec; ++k) classify(e[k], d, p);
  }
  for (unsigned long long i = tail_begin + begin; i < d.count; i += stride) classify(base[i], d, p);
}

__device__ void scan_unaligned_bytes(const DevTensor& d, unsigned long long begin,
                                     unsigned long long stride, Partial& p) {
  for (unsigned long long i = begin; i < d.count; i += stride) {
    unsigned long long x = 0;
    for (int b = 0; b < d.bytes; ++b) x |= (unsigned long long)d.data[i * d.bytes + b] << (8 * b);
    classify(x, d, p);
  }
}

__device__ __forceinline__ unsigned long long warp_sum(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ unsigned long long warp_min(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_down_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ unsigned long long warp_max(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_down_sync(0xffffffffu, v, o));
  return v;
}

// out[i].reserved holds the min magnitude bits and the bits of abs_max the max until finalize.
__global__ void init_kernel(Batch b, opforge_overflow_stats* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= b.n) return;
  opforge_overflow_stats s = {};
  s.count = b.t[i].count;
  s.reserved = ~0ull;
  out[i] = s;
}

__global__ void __launch_bounds__(kThreads) stats_kernel(Batch b, opforge_overflow_stats* out) {
  int ti = 0;
  while (ti + 1 < b.n && blockIdx.x >= b.t[ti].block_end) ++ti;
  const DevTensor& d = b.t[ti];
  if (blockIdx.x < d.block_begin || blockIdx.x >= d.block_end) return;
  const unsigned long long nblocks = d.block_end - d.block_begin;
  const unsigned long long begin = (blockIdx.x - d.block_begin) * kThreads + threadIdx.x;
  const unsigned long long stride = nblocks * kThreads;
  Partial p = {0, 0, 0, 0, 0, 0, ~0ull, 0};
  if (reinterpret_cast<uintptr_t>(d.data) % d.bytes != 0) {
    scan_unaligned_bytes(d, begin, stride, p);
  } else {
    switch (d.bytes) {
      case 1: scan_range<unsigned char>(d, begin, stride, p); break;
      case 2: scan_range<unsigned short>(d, begin, stride, p); break;
      case 4: scan_range<unsigned int>(d, begin, stride, p); break;
      default: scan_range<unsigned long long>(d, begin, stride, p); break;
    }
  }
  __shared__ Partial warps[kThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  Partial w = {warp_sum(p.nan), warp_sum(p.pinf), warp_sum(p.ninf), warp_sum(p.zero),
               warp_sum(p.sub), warp_sum(p.over), warp_min(p.mn), warp_max(p.mx)};
  if (lane == 0) warps[warp] = w;
  __syncthreads();
  if (threadIdx.x != 0) return;
  Partial s = warps[0];
  for (int k = 1; k < kThreads / 32; ++k) {
    s.nan += warps[k].nan; s.pinf += warps[k].pinf; s.ninf += warps[k].ninf;
    s.zero += warps[k].zero; s.sub += warps[k].sub; s.over += warps[k].over;
    s.mn = min(s.mn, warps[k].mn); s.mx = max(s.mx, warps[k].mx);
  }
  opforge_overflow_stats* o = &out[ti];
  if (s.nan) atomicAdd(reinterpret_cast<unsigned long long*>(&o->nan_count), s.nan);
  if (s.pinf) atomicAdd(reinterpret_cast<unsigned long long*>(&o->posinf_count), s.pinf);
  if (s.ninf) atomicAdd(reinterpret_cast<unsigned long long*>(&o->neginf_count), s.ninf);
  if (s.zero) atomicAdd(reinterpret_cast<unsigned long long*>(&o->zero_count), s.zero);
  if (s.sub) atomicAdd(reinterpret_cast<unsigned long long*>(&o->subnormal_count), s.sub);
  if (s.over) atomicAdd(reinterpret_cast<unsigned long long*>(&o->over_threshold_count), s.over);
  atomicMin(reinterpret_cast<unsigned long long*>(&o->reserved), s.mn);
  atomicMax(reinterpret_cast<unsigned long long*>(&o->abs_max), s.mx);
}

struct DevLayout {
  int exp_bits, mant_bits;
};
struct FinBatch {
  DevLayout l[kMaxPerLaunch];
  int n;
};

__device__ double dev_magnitude(DevLayout l, unsigned long long a) {
  const int bias = (1 << (l.exp_bits - 1)) - 1;
  const unsigned long long m = a & ((1ull << l.mant_bits) - 1);
  const int e = int(a >> l.mant_bits);
  if (e == 0) return ldexp(double(m), 1 - bias - l.mant_bits);
  return ldexp(double((1ull << l.mant_bits) + m), e - bias - l.mant_bits);
}

__global__ void finalize_kernel(FinBatch f, opforge_overflow_stats* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= f.n) return;
  opforge_overflow_stats& s = out[i];
  const unsigned long long mx = *reinterpret_cast<unsigned long long*>(&s.abs_max);
  const bool any_finite = s.count > s.nan_count + s.posinf_count + s.neginf_count;
  s.abs_min = any_finite ? dev_magnitude(f.l[i], s.reserved) : HUGE_VAL;
  s.abs_max = any_finite ? dev_magnitude(f.l[i], mx) : -1.0;
  s.reserved = 0;
}

int cuda_fail(cudaError_t e, const char* what) {
  std::string m = std::string(what) + ": " + cudaGetErrorString(e);
  return set_error(e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver
                       ? OPFORGE_OVERFLOW_ENODEV : OPFORGE_OVERFLOW_ECUDA,
                   m.c_str());
}

int sm_count() {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) return 0;
  return sms;
}

}  // namespace opforge_overflow_stats_detail
using namespace opforge_overflow_stats_detail;

extern "C" {

int opforge_overflow_cuda_device_count(void) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return cuda_fail(e, "cudaGetDeviceCount");
  return n;
}

int opforge_overflow_stats_cuda_multi(const opforge_overflow_tensor* tensors, int ntensors,
                                      opforge_overflow_stats* device_out, void* stream) {
  if (ntensors < 0 || (ntensors > 0 && (tensors == nullptr || device_out == nullptr)))
    return set_error(OPFORGE_OVERFLOW_EINVAL, "bad tensor list");
  if (ntensors == 0) return 0;
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess) return cuda_fail(e, "cudaGetDeviceCount");
  if (ndev == 0) return set_error(OPFORGE_OVERFLOW_ENODEV, "no CUDA device");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int target_blocks = (sm_count() > 0 ? sm_count() : 108) * 4;
  for (int first = 0; first < ntensors; first += kMaxPerLaunch) {
    const int n = ntensors - first < kMaxPerLaunch ? ntensors - first : kMaxPerLaunch;
    Batch b{};
    FinBatch f{};
    b.n = f.n = n;
    unsigned long long total = 0;
    for (int i = 0; i < n; ++i) total += tensors[first + i].count;
    int next_block = 0;
    for (int i = 0; i < n; ++i) {
      const opforge_overflow_tensor& t = tensors[first + i];
      const Layout l = layout_of(t.dtype);
      if (l.bytes == 0) return set_error(OPFORGE_OVERFLOW_EINVAL, "unknown dtype code");
      if (t.count > 0 && t.data == nullptr) return set_error(OPFORGE_OVERFLOW_EINVAL, "null data");
      DevTensor& d = b.t[i];
      d.data = static_cast<const unsigned char*>(t.data);
      d.count = t.count;
      d.abs_mask = l.abs_mask();
      d.finite_end = l.finite_end();
      d.nan_begin = l.nan_begin();
      d.min_normal = l.min_normal();
      d.threshold = opforge_overflow::threshold_bits_for(t.dtype, t.threshold);
      d.bytes = l.bytes;
      d.sign_shift = l.exp_bits + l.mant_bits;
      // Blocks in proportion to size, at least one (even for n = 0: it only writes the init values).
      unsigned long long share = total ? (t.count * (unsigned long long)target_blocks) / total : 0;
      const unsigned long long cap = (t.count + kThreads * 16ull - 1) / (kThreads * 16ull);
      if (share > cap) share = cap;
      if (share < 1) share = 1;
      d.block_begin = next_block;
      d.block_end = next_block + int(share);
      next_block = d.block_end;
      f.l[i] = {l.exp_bits, l.mant_bits};
    }
    opforge_overflow_stats* o = device_out + first;
    init_kernel<<<1, kMaxPerLaunch, 0, s>>>(b, o);
    stats_kernel<<<next_block, kThreads, 0, s>>>(b, o);
    finalize_kernel<<<1, kMaxPerLaunch, 0, s>>>(f, o);
    e = cudaGetLastError();
    if (e != cudaSuccess) return cuda_fail(e, "stats kernel launch");
  }
  return 0;
}

int opforge_overflow_stats_cuda_sync(const opforge_overflow_tensor* tensors, int ntensors,
                                     opforge_overflow_stats* host_out, void* stream) {
  if (ntensors <= 0) return ntensors < 0 ? set_error(OPFORGE_OVERFLOW_EINVAL, "ntensors < 0") : 0;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  // Grow-only device and pinned buffers, one per thread: one copy and one synchronisation per call.
  thread_local opforge_overflow_stats* dev = nullptr;
  thread_local opforge_overflow_stats* pinned = nullptr;
  thread_local int capacity = 0;
  cudaError_t e;
  if (capacity < ntensors) {
    if (dev) cudaFree(dev);
    if (pinned) cudaFreeHost(pinned);
    dev = nullptr; pinned = nullptr; capacity = 0;
    if ((e = cudaMalloc(&dev, sizeof(opforge_overflow_stats) * ntensors)) != cudaSuccess)
      return cuda_fail(e, "cudaMalloc");
    if ((e = cudaMallocHost(&pinned, sizeof(opforge_overflow_stats) * ntensors)) != cudaSuccess)
      return cuda_fail(e, "cudaMallocHost");
    capacity = ntensors;
  }
  int rc = opforge_overflow_stats_cuda_multi(tensors, ntensors, dev, stream);
  if (rc != 0) return rc;
  if ((e = cudaMemcpyAsync(pinned, dev, sizeof(opforge_overflow_stats) * ntensors,
                           cudaMemcpyDeviceToHost, s)) != cudaSuccess)
    return cuda_fail(e, "cudaMemcpyAsync");
  if ((e = cudaStreamSynchronize(s)) != cudaSuccess) return cuda_fail(e, "cudaStreamSynchronize");
  for (int i = 0; i < ntensors; ++i) host_out[i] = pinned[i];
  return 0;
}

}  // extern "C"
