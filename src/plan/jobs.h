#pragma once
/// How many compiles run at once under `[build] jobs = "auto"`: no more than the cores, and no more
/// than the memory the machine has available holds at the expected peak of one compile.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ops/manifest.h"
#include "probe/machine.h"
#include "util/error.h"

namespace opforge::plan {

namespace fs = std::filesystem;

/// Without history, the expected peak resident memory of one compile (KiB). Measured here (torch
/// 2.15, CUDA 13.0, gcc 12, one arch; ru_maxrss, i.e. the compile's largest process): nvcc -arch
/// sm_90 on DeepSpeed 0.19.8's csrc/adam/multi_tensor_adam.cu (ATen) 1.28 GiB, on
/// csrc/transformer/normalize_kernels.cu 0.74 GiB; opforge's own records of the cpu_adam,
/// fused_adam and utils steps (8.0) 1.49-1.53 GiB, g++ on their torch-extension .cpp files.
/// DS_BUILD_OPS=1 (bench/results/deepspeed_all_ops.txt): the heaviest op step is
/// inference_core_ops at 2.93 GiB, then transformer_inference 1.84 GiB; every C++-only op
/// 1.50-1.74 GiB. With [build] gcc_gc_heap_mib's 1 GiB (gcc collects later) a g++ compile of a
/// torch extension file holds 1.4-2.3 GiB (DeepSpeed's csrc/compile/z3.cpp: 1.73 -> 2.30 GiB). The
/// defaults (3 GiB, 2.5 GiB) stay above those; a multi-arch nvcc counts as one job per nvcc thread.
inline constexpr std::uint64_t kDefaultNvccPeakKib = 3ull * 1024 * 1024;
inline constexpr std::uint64_t kDefaultCxxPeakKib = 5ull * 1024 * 1024 / 2;

struct AvailableMemory {
  std::uint64_t kib = 0;
  std::string from;  ///< "MemAvailable", "cgroup v2 memory.max", "cgroup v1 memory.limit_in_bytes"
};

/// Memory available to this build: /proc/meminfo's MemAvailable, lowered to what the memory limit
/// of this process's cgroup leaves when that is less: v2 memory.max − memory.current, v1 the
/// hierarchical limit (memory.stat) − memory.usage_in_bytes; inactive page cache counts as free
/// in both (the kernel reclaims it before an out-of-memory kill). nullopt when nothing can be read.
std::optional<AvailableMemory> available_memory(const probe::FileSystem& fs);
/// available_memory's KiB.
std::optional<std::uint64_t> available_memory_kib(const probe::FileSystem& fs);

/// The recorded peaks: <cache>/compile-peaks.json, op name → KiB.
std::map<std::string, std::uint64_t> load_compile_peaks(const probe::FileSystem& fs, const fs::path& cache_dir);
/// Records the peaks a build measured, keeping the larger of the old and the new value per op (a
/// build served by ccache measures less than a compile costs). Errors are ignored: the file is a
/// hint, never an input of the wheel.
void store_compile_peaks(probe::FileSystem& fs, const fs::path& cache_dir,
                         const std::map<std::string, std::uint64_t>& peaks);

struct MemoryJobs {
  unsigned jobs = 1;
  std::string why;  ///< "2 cores; 21.4 GiB available / 2.9 GiB per nvcc compile"
};

/// min(cores, available / expected peak), at least 1. The expected peak is the largest recorded
/// peak of the ops built, or the default for their kind (nvcc for CUDA ops) where an op has none.
/// A command build without ops (any setup.py project) takes the largest compile step its earlier
/// builds measured, `peaks[steps_key]` (steps_key: "steps:<package name>"), and the cores without one.
/// Without a known available memory: the cores.
/// `limited_by` (e.g. "cgroup v1 memory.limit_in_bytes") is named in `why` when not empty.
/// `reserve_kib` is kept aside first (a precompiled torch header being made: kPchMakeKib).
MemoryJobs memory_aware_jobs(unsigned cores, std::optional<std::uint64_t> available_kib,
                             const std::vector<ops::Decision>& ops, const std::map<std::string, std::uint64_t>& peaks,
                             std::string_view limited_by = {}, std::string_view steps_key = {},
                             std::uint64_t reserve_kib = 0);

/// What making a precompiled torch/extension.h takes beside the compiles (compile/pch/pch.h): one
/// compile makes it at a time, about 2.1 GiB for torch 2.15 with g++ 12, 2.4 GiB with [build]
/// gcc_gc_heap_mib's 1 GiB (measured, ru_maxrss), rounded up.
inline constexpr std::uint64_t kPchMakeKib = 3ull * 1024 * 1024;

/// The compile-peaks.json key of a command build's compile steps: "steps:<package name>".
std::string steps_peak_key(std::string_view package);

/// "21.4 GiB"
std::string gib(std::uint64_t kib);

}  // namespace opforge::plan
