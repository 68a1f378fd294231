// GPU statistics: one fused pass per tensor list, results reduced in-device, read back once.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "dtype_traits.h"
#include "overflow.h"
#include "scan_core.h"

namespace opforge_overflow {
int set_error(int code, const char* message);
}

// A named namespace, not an anonymous one: nvcc hashes the source file's absolute path into
// anonymous-namespace symbols, which would make the library depend on where the tree lives.
namespace opforge_overflow_stats_detail {

using opforge_overflow::Layout;
using opforge_overflow::layout_of;
using opforge_overflow::set_error;

using opforge_overflow::RawCounts;
using opforge_overflow::ScanParams;

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 4;    // the register use (64/thread) allows 4 resident blocks per SM
constexpr int kMaxPerLaunch = 48;  // 48 x 56-byte DevTensor: the parameter block stays under 4 KiB

struct DevTensor {  // 56 bytes: 48 of them stay well under the classic 4 KiB parameter limit
  const unsigned char* data;
  unsigned long long count;
  unsigned long long last_finite, min_normal, threshold;  // the rest of ScanParams follows from bytes
  int bytes;
  int block_begin, block_end;  // this tensor's share of the grid
};

struct Batch {
  DevTensor t[kMaxPerLaunch];
  int n;
};

template <class W>
__device__ __forceinline__ ScanParams<W> params(const DevTensor& d) {
  return opforge_overflow::make_scan_params<W>(d.bytes, d.last_finite, d.min_normal, d.threshold);
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

// Until finalize, the count fields hold raw counts (scan_core.h), reserved holds the min magnitude
// bits and abs_max the max magnitude bits.
__global__ void init_kernel(Batch b, opforge_overflow_stats* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= b.n) return;
  opforge_overflow_stats s = {};
  s.count = b.t[i].count;
  s.reserved = ~0ull;
  out[i] = s;
}

// Two 16-byte loads in flight per thread x 1024 threads = 32 KiB per SM, above what H100 memory
// latency x bandwidth asks for (~18 KiB per SM); fewer registers would spill in the fp64 path.
__global__ void __launch_bounds__(kThreads, kBlocksPerSm) stats_kernel(Batch b, opforge_overflow_stats* out) {
  int ti = 0;
  while (ti + 1 < b.n && blockIdx.x >= b.t[ti].block_end) ++ti;
  const DevTensor& d = b.t[ti];
  if (blockIdx.x < d.block_begin || blockIdx.x >= d.block_end) return;
  const unsigned long long nblocks = d.block_end - d.block_begin;
  const unsigned long long begin = (blockIdx.x - d.block_begin) * kThreads + threadIdx.x;
  const unsigned long long stride = nblocks * kThreads;
  using opforge_overflow::scan_share;
  RawCounts p;
  switch (d.bytes) {
    case 1: p = scan_share<1, unsigned>(d.data, d.count, begin, stride, params<unsigned>(d)); break;
    case 2: p = scan_share<2, unsigned>(d.data, d.count, begin, stride, params<unsigned>(d)); break;
    case 4: p = scan_share<4, unsigned>(d.data, d.count, begin, stride, params<unsigned>(d)); break;
    default:
      p = scan_share<8, unsigned long long>(d.data, d.count, begin, stride,
                                            params<unsigned long long>(d));
      break;
  }
  __shared__ RawCounts warps[kThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const RawCounts w = {warp_sum(p.nonfinite),    warp_sum(p.pinf),           warp_sum(p.ninf),
                       warp_sum(p.zero),         warp_sum(p.below_normal),   warp_sum(p.above_threshold),
                       warp_min(p.mn),           warp_max(p.mx)};
  if (lane == 0) warps[warp] = w;
  __syncthreads();
  if (threadIdx.x != 0) return;
  RawCounts s = warps[0];
  for (int k = 1; k < kThreads / 32; ++k) opforge_overflow::raw_add(s, warps[k]);
  opforge_overflow_stats* o = &out[ti];
  auto add = [](uint64_t* field, unsigned long long v) {
    if (v) atomicAdd(reinterpret_cast<unsigned long long*>(field), v);
  };
  add(&o->nan_count, s.nonfinite);
  add(&o->posinf_count, s.pinf);
  add(&o->neginf_count, s.ninf);
  add(&o->zero_count, s.zero);
  add(&o->subnormal_count, s.below_normal);
  add(&o->over_threshold_count, s.above_threshold);
  atomicMin(reinterpret_cast<unsigned long long*>(&o->reserved), s.mn);
  atomicMax(reinterpret_cast<unsigned long long*>(&o->abs_max), s.mx);
}

struct DevLayout {
  int exp_bits, mant_bits;
  bool has_inf;
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
  const RawCounts r = {s.nan_count, s.posinf_count, s.neginf_count, s.zero_count,
                       s.subnormal_count, s.over_threshold_count, s.reserved,
                       *reinterpret_cast<unsigned long long*>(&s.abs_max)};
  const opforge_overflow::DerivedCounts d = opforge_overflow::derive(r, s.count, f.l[i].has_inf);
  opforge_overflow::store_counts(d, &s);
  s.abs_min = d.finite ? dev_magnitude(f.l[i], r.mn) : HUGE_VAL;
  s.abs_max = d.finite ? dev_magnitude(f.l[i], r.mx) : -1.0;
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
  const int sms = sm_count();
  const int target_blocks = (sms > 0 ? sms : 108) * kBlocksPerSm;
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
      const ScanParams<unsigned long long> q = opforge_overflow::scan_params<unsigned long long>(
          l, opforge_overflow::threshold_bits_for(t.dtype, t.threshold));
      d.data = static_cast<const unsigned char*>(t.data);
      d.count = t.count;
      d.last_finite = q.last_finite;
      d.min_normal = q.min_normal;
      d.threshold = q.threshold;
      d.bytes = l.bytes;
      // Blocks in proportion to size, at least one (even for n = 0: it only writes the init values).
      unsigned long long share = total ? (t.count * (unsigned long long)target_blocks) / total : 0;
      const unsigned long long cap = (t.count + kThreads * 16ull - 1) / (kThreads * 16ull);
      if (share > cap) share = cap;
      if (share < 1) share = 1;
      d.block_begin = next_block;
      d.block_end = next_block + int(share);
      next_block = d.block_end;
      f.l[i] = {l.exp_bits, l.mant_bits, l.has_inf};
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
  // Grow-only device and pinned buffers per thread and per GPU (the results must live on the GPU
  // that runs the launch): one copy and one synchronisation per call.
  struct Buffers {
    opforge_overflow_stats* dev = nullptr;
    opforge_overflow_stats* pinned = nullptr;
    int capacity = 0;
  };
  constexpr int kMaxDevices = 64;
  thread_local Buffers per_device[kMaxDevices];
  int device = 0;
  cudaError_t e;
  if ((e = cudaGetDevice(&device)) != cudaSuccess) return cuda_fail(e, "cudaGetDevice");
  if (device < 0 || device >= kMaxDevices) return set_error(OPFORGE_OVERFLOW_EINVAL, "device ordinal above 63");
  Buffers& b = per_device[device];
  if (b.capacity < ntensors) {
    if (b.dev) cudaFree(b.dev);
    if (b.pinned) cudaFreeHost(b.pinned);
    b = Buffers{};
    if ((e = cudaMalloc(&b.dev, sizeof(opforge_overflow_stats) * ntensors)) != cudaSuccess)
      return cuda_fail(e, "cudaMalloc");
    if ((e = cudaMallocHost(&b.pinned, sizeof(opforge_overflow_stats) * ntensors)) != cudaSuccess)
      return cuda_fail(e, "cudaMallocHost");
    b.capacity = ntensors;
  }
  opforge_overflow_stats* dev = b.dev;
  opforge_overflow_stats* pinned = b.pinned;
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
