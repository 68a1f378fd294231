#pragma once
/// Where CUDA toolkits are on a machine, and whether each is one.
#include <optional>

#include "cuda/toolkit.h"
#include "probe/machine.h"

namespace opforge::cuda {

/// Every candidate (docs/reference.md §4 search order, wrapper scripts followed, pip-wheel toolkits under
/// site-packages/nvidia), validated (bin/nvcc, cuda.h, libcudart*), with versions
/// (version.json > version.txt > nvcc --version > cuda.h); nothing chosen.
Resolution discover(probe::Machine m, const std::optional<TorchInfo>& torch);

}  // namespace opforge::cuda
