#pragma once
/// GPU architecture resolution: GPU reading, nvcc intersection, the arch list of a build.
#include <string>
#include <string_view>
#include <vector>

#include "cuda/toolkit.h"
#include "devices/arch.h"
#include "probe/machine.h"
#include "util/error.h"

namespace opforge::devices {

/// Parses `nvidia-smi --query-gpu=index,name,compute_cap --format=csv,noheader` output.
std::vector<Gpu> parse_nvidia_smi(std::string_view text);

/// Parses `nvcc --list-gpu-arch` output (compute_XY lines) into plain arches.
std::vector<target::Arch> parse_list_gpu_arch(std::string_view text);

/// The sm targets of the toolchains/ table for a CUDA version (docs/reference.md §2).
std::vector<target::Arch> table_accepted(const Version& cuda);

/// Driver API via m.dl ("libcuda.so.1", cuInit, cuDeviceGetCount, cuDeviceGet,
/// cuDeviceGetAttribute 75/76, name), honouring CUDA_VISIBLE_DEVICES; nvidia-smi fallback.
/// `reader` is set to "driver API", "nvidia-smi" or "none" (with why).
std::vector<Gpu> read_gpus(probe::Machine m, std::string& reader);

/// The CUDA version the NVIDIA driver supports (cuDriverGetVersion through m.dl: 13000 → "13.0"),
/// which bounds the PTX it can JIT; empty when there is no driver or it does not answer.
std::string driver_cuda_version(probe::Machine m);

/// Which sm targets this nvcc accepts (nvcc --list-gpu-arch, table fallback). Plain targets
/// imply their 'a'/'f' variants.
std::vector<target::Arch> accepted_by(probe::Machine m, const cuda::Toolkit& tk);

/// `recipe_list` (the plan's: the recipe's [arch] list, or TORCH_CUDA_ARCH_LIST or the node
/// reports' when they override it; the environment is not read here) > GPUs (union, sorted, +PTX
/// on last) > fallback (say so); intersected with accepted_by, every dropped entry reported with why.
Result<ArchDecision> resolve(probe::Machine m, const cuda::Toolkit& tk, const std::string& recipe_list,
                             const std::string& fallback);

}  // namespace opforge::devices
