#pragma once
/// How a DeepSpeed-style command build shares its job slots between ops compiled one process per
/// op: setup.py alone compiles op after op, so an op with one or two translation units would leave
/// cores idle while its python starts and its single compile runs. Here several op processes run
/// at once, the costliest first, and the sum of their jobs never exceeds the plan's jobs (the
/// memory-aware `jobs = "auto"`, MAX_JOBS or -j): each slot is one compile at its expected peak.
#include <cstddef>
#include <string>
#include <vector>

#include "ops/ops.h"

namespace opforge::compile {

/// One op to compile.
struct OpWork {
  std::string op;
  unsigned units = 1;  ///< translation units (ninja jobs it can use at once), at least 1
  unsigned cuda_units = 0;
  double cost = 1;  ///< relative compile time: a .cu unit counts kCudaUnitCost, any other 1
};

/// A .cu translation unit costs about this many host ones (DeepSpeed 0.19.8, one arch, measured
/// here: nvcc on its kernels takes 20-60 s where g++ on its torch-extension .cpp files takes 8-15 s).
inline constexpr double kCudaUnitCost = 4;

/// The work of each op the plan builds, in plan order (sources as the probe read them: an op
/// whose sources are unknown counts as one host unit).
std::vector<OpWork> op_work(const std::vector<ops::Decision>& ops);

/// The order ops start in: highest cost first (the longest job must not start last), then name.
/// Indices into `work`.
std::vector<std::size_t> start_order(const std::vector<OpWork>& work);

/// What one op process gets when it starts.
struct Grant {
  unsigned jobs = 1;          ///< MAX_JOBS for its ninja
  unsigned nvcc_threads = 1;  ///< nvcc --threads (1: not passed)
  unsigned slots() const { return jobs * nvcc_threads; }
};

/// The grant of an op starting with `free` slots while `waiting` other ops have not started yet:
/// one slot per waiting op is left for them when there are enough; the op takes what is left, up
/// to its units. When slots remain beyond its units and the plan compiles for several
/// architectures (`arches`), its CUDA compiles use nvcc --threads (one thread per architecture
/// at most) and each counts as that many slots. `free` >= 1.
Grant grant_for(const OpWork& work, unsigned free, std::size_t waiting, std::size_t arches);

}  // namespace opforge::compile
