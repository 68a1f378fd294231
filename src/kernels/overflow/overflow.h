// opforge overflow op: inf/nan/underflow/overflow statistics in one fused pass.
// C ABI shared by the CPU implementation (stats_cpu.cpp) and the CUDA one (stats.cu).
#pragma once
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OPFORGE_OVERFLOW_ABI_VERSION 1
#define OPFORGE_OVERFLOW_API __attribute__((visibility("default")))

/// Element types; the numbers are part of the ABI.
enum opforge_overflow_dtype {
  OPFORGE_OVERFLOW_F32 = 0,
  OPFORGE_OVERFLOW_F16 = 1,
  OPFORGE_OVERFLOW_BF16 = 2,
  OPFORGE_OVERFLOW_F64 = 3,
  OPFORGE_OVERFLOW_F8E4M3FN = 4,
  OPFORGE_OVERFLOW_F8E5M2 = 5,
};

/// Return codes (0 = success).
enum {
  OPFORGE_OVERFLOW_OK = 0,
  OPFORGE_OVERFLOW_EINVAL = -22,
  OPFORGE_OVERFLOW_ENODEV = -19,   // no CUDA driver/device
  OPFORGE_OVERFLOW_ENOSPC = -28,   // a frame buffer is full: read it, then add again
  OPFORGE_OVERFLOW_ECUDA = -1000,  // a CUDA call failed; see last_error
};

/// Statistics of one tensor, 80 bytes. abs_min/abs_max cover finite values only:
/// abs_min = +inf and abs_max = -1 when there is no finite element.
typedef struct opforge_overflow_stats {
  uint64_t count;
  uint64_t nan_count;
  uint64_t posinf_count;
  uint64_t neginf_count;
  uint64_t zero_count;
  uint64_t subnormal_count;
  uint64_t over_threshold_count;  // finite |x| > threshold
  uint64_t reserved;
  double abs_min;
  double abs_max;
} opforge_overflow_stats;

/// One entry of a multi-tensor launch.
typedef struct opforge_overflow_tensor {
  const void* data;
  uint64_t count;
  int32_t dtype;
  int32_t pad;
  double threshold;  // <= 0 or NaN: the dtype's max / 2
} opforge_overflow_tensor;

OPFORGE_OVERFLOW_API int opforge_overflow_abi_version(void);
/// Message of the last failure on this thread ("" when none).
OPFORGE_OVERFLOW_API const char* opforge_overflow_last_error(void);
/// Largest finite value of a dtype (448 for e4m3fn), or NaN for an unknown dtype.
OPFORGE_OVERFLOW_API double opforge_overflow_dtype_max(int dtype);
/// SIMD level the CPU path dispatches to: "avx2" or "generic".
OPFORGE_OVERFLOW_API const char* opforge_overflow_cpu_isa(void);

/// CPU: statistics of n contiguous elements at data (any alignment; n may be 0, data then may be null).
OPFORGE_OVERFLOW_API int opforge_overflow_stats_cpu(const void* data, uint64_t n, int dtype, double threshold,
                                                    opforge_overflow_stats* out);
/// CPU: several tensors, results into out[0..ntensors).
OPFORGE_OVERFLOW_API int opforge_overflow_stats_cpu_multi(const opforge_overflow_tensor* tensors, int ntensors,
                                                          opforge_overflow_stats* out);
/// Does nothing and returns 0; the signature of stats_cpu_multi. The benchmark's CPU proxy calls it
/// in place of the statistics pass to measure what the hooks cost around the native call.
OPFORGE_OVERFLOW_API int opforge_overflow_stats_cpu_noop(const opforge_overflow_tensor* tensors, int ntensors,
                                                         opforge_overflow_stats* out);

/// CUDA: number of devices visible (>= 0), or a negative code when there is no driver.
OPFORGE_OVERFLOW_API int opforge_overflow_cuda_device_count(void);
/// CUDA: one launch for all tensors (device pointers), results written to device_out[0..ntensors)
/// asynchronously on stream (a cudaStream_t, null = legacy default stream). tensors is host memory.
OPFORGE_OVERFLOW_API int opforge_overflow_stats_cuda_multi(const opforge_overflow_tensor* tensors, int ntensors,
                                                           opforge_overflow_stats* device_out, void* stream);
/// CUDA convenience: multi launch + copy into pinned host memory + synchronise the stream.
OPFORGE_OVERFLOW_API int opforge_overflow_stats_cuda_sync(const opforge_overflow_tensor* tensors, int ntensors,
                                                          opforge_overflow_stats* host_out, void* stream);

/// Deferred reads: a bounded buffer of statistics records on one GPU (the records of many frames),
/// allocated once, `capacity` records of device memory and as many of pinned host memory, and
/// reused after each read. Adding never waits; reading waits once for everything added.
typedef struct opforge_overflow_frames opforge_overflow_frames;
/// CUDA: a buffer of capacity (> 0) records on the current device, into *out.
OPFORGE_OVERFLOW_API int opforge_overflow_frames_create(int capacity, opforge_overflow_frames** out);
/// CUDA: launches the statistics of n tensors (device pointers; `tensors` is host memory) into the
/// next n records, asynchronously on stream, from the buffer's device (it must be current). Returns
/// the index of the first record (>= 0), or OPFORGE_OVERFLOW_ENOSPC when they do not fit (nothing
/// launched: read, then add again).
OPFORGE_OVERFLOW_API int opforge_overflow_frames_add(opforge_overflow_frames* f, const opforge_overflow_tensor* tensors,
                                                     int n, void* stream);
/// CUDA: waits on stream for the launches made since the last read on every stream they went to,
/// copies their records into the host records (frames_host), waits for the copy and empties the
/// buffer. Returns the number of records copied (>= 0) or a negative code.
OPFORGE_OVERFLOW_API int opforge_overflow_frames_read(opforge_overflow_frames* f, void* stream);
/// The host records the reads copy into (capacity of them, valid until destroy).
OPFORGE_OVERFLOW_API const opforge_overflow_stats* opforge_overflow_frames_host(const opforge_overflow_frames* f);
/// Frees the buffer (null: nothing). Waits for nothing: read first when launches may be running.
OPFORGE_OVERFLOW_API void opforge_overflow_frames_destroy(opforge_overflow_frames* f);

/// Test kernels producing known numerics on the GPU, written to device memory at out (n elements of
/// the dtype given by the case). Cases:
///  1 fp16 dropout rescale: x = 6.27e4 (fp16), y = x * (1/(1-p)) in fp16 with p = 0.1 -> inf
///  2 fp16 products: a*b with a=b=300 -> inf in fp16 (fine in fp32)
///  3 fp16 flush: x * 1e-6 for x in [0.5, 1) -> subnormal fp16
///  4 bf16 flush: x * 1e-39 -> subnormal bf16
///  5 fp32 inf - inf -> NaN at every element
///  6 fp32 random fill with NaN planted at index `index`
///  7 fp32 random fill with -inf planted at index `index`
/// Returns the dtype of the produced array through *dtype_out. The selftest copies the array back
/// and checks the GPU statistics against the CPU oracle run on the same bytes.
OPFORGE_OVERFLOW_API int opforge_overflow_cuda_test_kernel(int which, void* out, uint64_t n, uint64_t index,
                                                           uint64_t seed, int* dtype_out, void* stream);
#ifdef __cplusplus
}
#endif
