// GPU statistics: one fused pass per tensor list, results reduced in-device, read back once.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
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
  int block_begin, block_end;         // this tensor's share of the grid
  unsigned char exp_bits, mant_bits;  // the layout, for the magnitudes of abs_min/abs_max
  bool has_inf;
};
static_assert(sizeof(DevTensor) == 56, "DevTensor grew: check the parameter block size");

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
// Lane 0 gets the warp's total (every lane must call it).
__device__ __forceinline__ RawCounts warp_reduce(const RawCounts& p) {
  return {warp_sum(p.nonfinite),       warp_sum(p.pinf), warp_sum(p.ninf), warp_sum(p.zero), warp_sum(p.below_normal),
          warp_sum(p.above_threshold), warp_min(p.mn),   warp_max(p.mx)};
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

// This block's share of its tensor, summed over the block: valid in thread 0. Every thread of the
// block must call it (warp shuffles and a barrier).
__device__ __forceinline__ RawCounts block_scan(const Batch& b, int* tensor) {
  int ti = 0;
  while (ti + 1 < b.n && blockIdx.x >= b.t[ti].block_end) ++ti;
  *tensor = ti;
  const DevTensor& d = b.t[ti];
  RawCounts p = opforge_overflow::raw_zero();
  if (blockIdx.x >= d.block_begin && blockIdx.x < d.block_end) {
    const unsigned long long nblocks = d.block_end - d.block_begin;
    const unsigned long long begin = (blockIdx.x - d.block_begin) * kThreads + threadIdx.x;
    const unsigned long long stride = nblocks * kThreads;
    using opforge_overflow::scan_share;
    switch (d.bytes) {
      case 1: p = scan_share<1, unsigned>(d.data, d.count, begin, stride, params<unsigned>(d)); break;
      case 2: p = scan_share<2, unsigned>(d.data, d.count, begin, stride, params<unsigned>(d)); break;
      case 4: p = scan_share<4, unsigned>(d.data, d.count, begin, stride, params<unsigned>(d)); break;
      default:
        p = scan_share<8, unsigned long long>(d.data, d.count, begin, stride, params<unsigned long long>(d));
        break;
    }
  }
  __shared__ RawCounts warps[kThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const RawCounts w = warp_reduce(p);
  if (lane == 0) warps[warp] = w;
  __syncthreads();
  RawCounts s = warps[0];
  if (threadIdx.x == 0)
    for (int k = 1; k < kThreads / 32; ++k) opforge_overflow::raw_add(s, warps[k]);
  return s;
}

// Two 16-byte loads in flight per thread x 1024 threads = 32 KiB per SM, above what H100 memory
// latency x bandwidth asks for (~18 KiB per SM); fewer registers would spill in the fp64 path.
__global__ void __launch_bounds__(kThreads, kBlocksPerSm) stats_kernel(Batch b, opforge_overflow_stats* out) {
  int ti;
  const RawCounts s = block_scan(b, &ti);
  if (threadIdx.x != 0) return;
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

// The reported statistics of one tensor from its raw counts (min/max as magnitude bits).
__device__ void finish(const RawCounts& r, unsigned long long count, DevLayout l, opforge_overflow_stats* out) {
  const opforge_overflow::DerivedCounts d = opforge_overflow::derive(r, count, l.has_inf);
  opforge_overflow_stats s = {};
  s.count = count;
  opforge_overflow::store_counts(d, &s);
  s.abs_min = d.finite ? dev_magnitude(l, r.mn) : HUGE_VAL;
  s.abs_max = d.finite ? dev_magnitude(l, r.mx) : -1.0;
  *out = s;
}

__global__ void finalize_kernel(FinBatch f, opforge_overflow_stats* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= f.n) return;
  const opforge_overflow_stats& s = out[i];
  const RawCounts r = {s.nan_count,       s.posinf_count,
                       s.neginf_count,    s.zero_count,
                       s.subnormal_count, s.over_threshold_count,
                       s.reserved,        *reinterpret_cast<const unsigned long long*>(&s.abs_max)};
  finish(r, s.count, f.l[i], &out[i]);
}

__device__ __forceinline__ RawCounts load_partial(const RawCounts* p) {
  // Written by other blocks, maybe on other SMs: read around the (non-coherent) L1.
  const unsigned long long* q = reinterpret_cast<const unsigned long long*>(p);
  return {__ldcg(q),     __ldcg(q + 1), __ldcg(q + 2), __ldcg(q + 3),
          __ldcg(q + 4), __ldcg(q + 5), __ldcg(q + 6), __ldcg(q + 7)};
}

// The synchronous read in one launch: each block leaves its sums in partial[block]; the last
// block to finish (ticket) adds them up per tensor (a warp per tensor), writes the results to
// `out` (mapped pinned host memory: no copy) and puts the ticket back to 0 for the next launch.
// That saves the init and finalize launches and the copy of the asynchronous path, most of a
// small read's time. The scratch is the calling thread's own, and that thread waits for each
// launch before the next, so launches never share it.
__global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    fused_kernel(Batch b, RawCounts* partial, unsigned int* ticket, opforge_overflow_stats* out) {
  int ti;
  const RawCounts s = block_scan(b, &ti);
  __shared__ bool last;
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = s;
    __threadfence();
    last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int i = warp; i < b.n; i += kThreads / 32) {
    const DevTensor& d = b.t[i];
    RawCounts r = opforge_overflow::raw_zero();
    for (int k = d.block_begin + lane; k < d.block_end; k += 32)
      opforge_overflow::raw_add(r, load_partial(partial + k));
    r = warp_reduce(r);
    if (lane == 0) finish(r, d.count, DevLayout{d.exp_bits, d.mant_bits, d.has_inf}, &out[i]);
  }
  if (threadIdx.x == 0) *ticket = 0;
}

int cuda_fail(cudaError_t e, const char* what) {
  std::string m = std::string(what) + ": " + cudaGetErrorString(e);
  return set_error(
      e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? OPFORGE_OVERFLOW_ENODEV : OPFORGE_OVERFLOW_ECUDA,
      m.c_str());
}

constexpr int kMaxDevices = 64;

// The current device, and the blocks for a full launch on it (enough resident blocks to keep
// every SM's memory pipe busy); the SM count is asked once per device and thread.
int current_device(int* device, int* target_blocks) {
  thread_local int sms[kMaxDevices] = {};
  const cudaError_t e = cudaGetDevice(device);
  if (e != cudaSuccess) return cuda_fail(e, "cudaGetDevice");
  if (*device < 0 || *device >= kMaxDevices) return set_error(OPFORGE_OVERFLOW_EINVAL, "device ordinal above 63");
  int& n = sms[*device];
  if (n == 0) {
    int count = 0;
    const cudaError_t c = cudaGetDeviceCount(&count);
    if (c != cudaSuccess) return cuda_fail(c, "cudaGetDeviceCount");
    if (count == 0) return set_error(OPFORGE_OVERFLOW_ENODEV, "no CUDA device");
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, *device) != cudaSuccess || n <= 0) n = 108;
  }
  *target_blocks = n * kBlocksPerSm;
  return 0;
}

// Scratch of the one-launch kernel (partial sums per block, the ticket), one per device and stream
// of a thread: launches on one stream run in order, so they never share it; a thread that uses
// more than kMaxScratch streams gets the three-launch path for the others.
struct Scratch {
  int device = -1;
  cudaStream_t stream = nullptr;
  RawCounts* partial = nullptr;
  unsigned int* ticket = nullptr;
  int blocks = 0;
  bool dirty = false;  // a launch failed: the ticket may be left anywhere
};
constexpr int kMaxScratch = 8;

Scratch* scratch_for(int device, cudaStream_t stream, int blocks) {
  thread_local Scratch table[kMaxScratch];
  Scratch* free_slot = nullptr;
  for (Scratch& s : table) {
    if (s.device == device && s.stream == stream && s.blocks >= blocks) return &s;
    if (s.device == device && s.stream == stream) {  // too small (never, with one GPU per ordinal)
      s.dirty = true;
      return nullptr;
    }
    if (s.device < 0 && free_slot == nullptr) free_slot = &s;
  }
  if (free_slot == nullptr) return nullptr;
  Scratch s;
  if (cudaMalloc(&s.partial, sizeof(RawCounts) * blocks) != cudaSuccess) return nullptr;
  if (cudaMalloc(&s.ticket, sizeof(unsigned int)) != cudaSuccess ||
      cudaMemset(s.ticket, 0, sizeof(unsigned int)) != cudaSuccess) {
    cudaFree(s.partial);
    return nullptr;
  }
  s.device = device;
  s.stream = stream;
  s.blocks = blocks;
  *free_slot = s;
  return free_slot;
}

// The launch parameters of n (<= kMaxPerLaunch) tensors: blocks in proportion to size, at least
// one each (even for an empty tensor: it only writes the initial values), at most one per 4096
// elements; the grid gets *blocks <= target_blocks + n blocks.
int make_batch(const opforge_overflow_tensor* tensors, int n, int target_blocks, Batch* b, int* blocks) {
  b->n = n;
  unsigned long long total = 0;
  for (int i = 0; i < n; ++i) total += tensors[i].count;
  int next_block = 0;
  for (int i = 0; i < n; ++i) {
    const opforge_overflow_tensor& t = tensors[i];
    const Layout l = layout_of(t.dtype);
    if (l.bytes == 0) return set_error(OPFORGE_OVERFLOW_EINVAL, "unknown dtype code");
    if (t.count > 0 && t.data == nullptr) return set_error(OPFORGE_OVERFLOW_EINVAL, "null data");
    DevTensor& d = b->t[i];
    const ScanParams<unsigned long long> q = opforge_overflow::scan_params<unsigned long long>(
        l, opforge_overflow::threshold_bits_for(t.dtype, t.threshold));
    d.data = static_cast<const unsigned char*>(t.data);
    d.count = t.count;
    d.last_finite = q.last_finite;
    d.min_normal = q.min_normal;
    d.threshold = q.threshold;
    d.bytes = l.bytes;
    unsigned long long share = total ? (t.count * (unsigned long long)target_blocks) / total : 0;
    const unsigned long long cap = (t.count + kThreads * 16ull - 1) / (kThreads * 16ull);
    if (share > cap) share = cap;
    if (share < 1) share = 1;
    d.block_begin = next_block;
    d.block_end = next_block + int(share);
    next_block = d.block_end;
    d.exp_bits = static_cast<unsigned char>(l.exp_bits);
    d.mant_bits = static_cast<unsigned char>(l.mant_bits);
    d.has_inf = l.has_inf;
  }
  *blocks = next_block;
  return 0;
}

// Statistics of tensors into out (device-visible) on a stream, batches of kMaxPerLaunch: one
// launch each with this thread's scratch for the stream, else init + scan + finalize.
int launch(const opforge_overflow_tensor* tensors, int ntensors, opforge_overflow_stats* out, cudaStream_t s) {
  int device = 0, target_blocks = 0;
  int rc = current_device(&device, &target_blocks);
  if (rc != 0) return rc;
  Scratch* scratch = scratch_for(device, s, target_blocks + kMaxPerLaunch);  // make_batch's bound
  if (scratch != nullptr && scratch->dirty) {
    if (cudaMemsetAsync(scratch->ticket, 0, sizeof(unsigned int), s) != cudaSuccess) scratch = nullptr;
    else scratch->dirty = false;
  }
  for (int first = 0; first < ntensors; first += kMaxPerLaunch) {
    const int n = ntensors - first < kMaxPerLaunch ? ntensors - first : kMaxPerLaunch;
    Batch b{};
    int blocks = 0;
    if ((rc = make_batch(tensors + first, n, target_blocks, &b, &blocks)) != 0) return rc;
    opforge_overflow_stats* o = out + first;
    if (scratch != nullptr) {
      fused_kernel<<<blocks, kThreads, 0, s>>>(b, scratch->partial, scratch->ticket, o);
    } else {
      FinBatch f{};
      f.n = n;
      for (int i = 0; i < n; ++i) f.l[i] = {b.t[i].exp_bits, b.t[i].mant_bits, b.t[i].has_inf};
      init_kernel<<<1, kMaxPerLaunch, 0, s>>>(b, o);
      stats_kernel<<<blocks, kThreads, 0, s>>>(b, o);
      finalize_kernel<<<1, kMaxPerLaunch, 0, s>>>(f, o);
    }
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
      if (scratch != nullptr) scratch->dirty = true;
      return cuda_fail(e, "stats kernel launch");
    }
  }
  return 0;
}

constexpr int kMaxFrameStreams = 8;  // streams a buffer waits on by event; more: the whole device

}  // namespace opforge_overflow_stats_detail
using namespace opforge_overflow_stats_detail;

struct opforge_overflow_frames {
  int device = -1;
  int capacity = 0;
  int used = 0;
  opforge_overflow_stats* records = nullptr;  // device memory
  opforge_overflow_stats* host = nullptr;     // pinned host memory
  cudaStream_t streams[kMaxFrameStreams] = {};
  cudaEvent_t events[kMaxFrameStreams] = {};
  int nstreams = 0;
  bool many_streams = false;  // launches went to more than kMaxFrameStreams streams since the last read
};

namespace opforge_overflow_stats_detail {

void free_frames(opforge_overflow_frames* f) {
  // Launches since the last read may still write the records: freeing under them would fault the
  // whole context. The streams may be gone by now, so the device is waited for (rare: at close).
  if (f->used > 0) cudaDeviceSynchronize();
  for (cudaEvent_t e : f->events)
    if (e != nullptr) cudaEventDestroy(e);
  if (f->records != nullptr) cudaFree(f->records);
  if (f->host != nullptr) cudaFreeHost(f->host);
  delete f;
}

// Remembers a stream the buffer's launches went to (the last one is checked first: usually the only one).
void note_stream(opforge_overflow_frames* f, cudaStream_t s) {
  if (f->nstreams > 0 && f->streams[f->nstreams - 1] == s) return;
  for (int i = 0; i < f->nstreams; ++i)
    if (f->streams[i] == s) return;
  if (f->nstreams == kMaxFrameStreams) f->many_streams = true;
  else f->streams[f->nstreams++] = s;
}

}  // namespace opforge_overflow_stats_detail

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
  return launch(tensors, ntensors, device_out, static_cast<cudaStream_t>(stream));
}

int opforge_overflow_stats_cuda_sync(const opforge_overflow_tensor* tensors, int ntensors,
                                     opforge_overflow_stats* host_out, void* stream) {
  if (ntensors <= 0) return ntensors < 0 ? set_error(OPFORGE_OVERFLOW_EINVAL, "ntensors < 0") : 0;
  if (tensors == nullptr || host_out == nullptr) return set_error(OPFORGE_OVERFLOW_EINVAL, "bad tensor list");
  // Mapped pinned results per thread and GPU: the kernel writes them, no copy. Each batch of
  // kMaxPerLaunch is waited for before the next reuses the buffer.
  struct Results {
    opforge_overflow_stats* pinned = nullptr;  // host memory the kernel writes through its mapping
    opforge_overflow_stats* mapped = nullptr;  // the same memory as the device sees it
  };
  thread_local Results per_device[kMaxDevices];
  int device = 0, target_blocks = 0;
  int rc = current_device(&device, &target_blocks);
  if (rc != 0) return rc;
  Results& r = per_device[device];
  cudaError_t e;
  if (r.pinned == nullptr) {
    if ((e = cudaHostAlloc(&r.pinned, sizeof(opforge_overflow_stats) * kMaxPerLaunch, cudaHostAllocMapped)) !=
        cudaSuccess)
      return cuda_fail(e, "cudaHostAlloc");
    if ((e = cudaHostGetDevicePointer(reinterpret_cast<void**>(&r.mapped), r.pinned, 0)) != cudaSuccess) {
      cudaFreeHost(r.pinned);
      r.pinned = nullptr;
      return cuda_fail(e, "cudaHostGetDevicePointer");
    }
  }
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  for (int first = 0; first < ntensors; first += kMaxPerLaunch) {
    const int n = ntensors - first < kMaxPerLaunch ? ntensors - first : kMaxPerLaunch;
    if ((rc = launch(tensors + first, n, r.mapped, s)) != 0) return rc;
    if ((e = cudaStreamSynchronize(s)) != cudaSuccess) return cuda_fail(e, "cudaStreamSynchronize");
    for (int i = 0; i < n; ++i) host_out[first + i] = r.pinned[i];
  }
  return 0;
}

int opforge_overflow_frames_create(int capacity, opforge_overflow_frames** out) {
  if (capacity <= 0 || out == nullptr) return set_error(OPFORGE_OVERFLOW_EINVAL, "frames: capacity <= 0 or out null");
  *out = nullptr;
  auto* f = new opforge_overflow_frames;
  cudaError_t e = cudaGetDevice(&f->device);
  const size_t bytes = sizeof(opforge_overflow_stats) * static_cast<size_t>(capacity);
  if (e == cudaSuccess) e = cudaMalloc(&f->records, bytes);
  if (e == cudaSuccess) e = cudaHostAlloc(&f->host, bytes, cudaHostAllocDefault);
  for (int i = 0; e == cudaSuccess && i < kMaxFrameStreams; ++i)
    e = cudaEventCreateWithFlags(&f->events[i], cudaEventDisableTiming);
  if (e != cudaSuccess) {
    free_frames(f);
    return cuda_fail(e, "frames_create");
  }
  f->capacity = capacity;
  *out = f;
  return 0;
}

int opforge_overflow_frames_add(opforge_overflow_frames* f, const opforge_overflow_tensor* tensors, int n,
                                void* stream) {
  if (f == nullptr || n < 0 || (n > 0 && tensors == nullptr))
    return set_error(OPFORGE_OVERFLOW_EINVAL, "frames_add: bad arguments");
  if (n > f->capacity - f->used) return OPFORGE_OVERFLOW_ENOSPC;
  const int first = f->used;
  if (n == 0) return first;
  int device = -1;
  const cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return cuda_fail(e, "cudaGetDevice");
  if (device != f->device) return set_error(OPFORGE_OVERFLOW_EINVAL, "frames_add: the buffer's device is not current");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int rc = launch(tensors, n, f->records + first, s);
  if (rc != 0) return rc;
  note_stream(f, s);
  f->used = first + n;
  return first;
}

int opforge_overflow_frames_read(opforge_overflow_frames* f, void* stream) {
  if (f == nullptr) return set_error(OPFORGE_OVERFLOW_EINVAL, "frames_read: null buffer");
  const int n = f->used;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaError_t e = cudaSuccess;
  if (f->many_streams) {
    e = cudaDeviceSynchronize();
  } else {
    // the copy on `s` starts once every stream's launches so far are done
    for (int i = 0; e == cudaSuccess && i < f->nstreams; ++i) {
      if (f->streams[i] == s) continue;
      e = cudaEventRecord(f->events[i], f->streams[i]);
      if (e == cudaSuccess) e = cudaStreamWaitEvent(s, f->events[i], 0);
    }
  }
  if (e == cudaSuccess && n > 0)
    e = cudaMemcpyAsync(f->host, f->records, sizeof(opforge_overflow_stats) * static_cast<size_t>(n),
                        cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  f->used = 0;
  f->nstreams = 0;
  f->many_streams = false;
  if (e != cudaSuccess) return cuda_fail(e, "frames_read");
  return n;
}

const opforge_overflow_stats* opforge_overflow_frames_host(const opforge_overflow_frames* f) {
  return f == nullptr ? nullptr : f->host;
}

void opforge_overflow_frames_destroy(opforge_overflow_frames* f) {
  if (f != nullptr) free_frames(f);
}

}  // extern "C"
