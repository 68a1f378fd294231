#pragma once
/// The GPUs of the machine and the architectures chosen for a build.
#include <optional>
#include <string>
#include <vector>

#include "target/arch.h"

namespace opforge::devices {

struct Gpu {
  int index = 0;
  std::string name;
  int major = 0;
  int minor = 0;
  std::string uuid;
};

struct ArchDecision {
  std::vector<target::Arch> arches;  ///< sorted, deduplicated, what nvcc accepts
  std::string source;                ///< "TORCH_CUDA_ARCH_LIST", "recipe [arch] list", "GPUs", "fallback"
  std::vector<Gpu> gpus;             ///< as read
  std::string gpu_reader;            ///< "driver API", "nvidia-smi", "none"
  std::vector<std::pair<std::string, std::string>> dropped;  ///< entry → why
  std::vector<std::string> notes;
  std::string str() const;  ///< "8.0;9.0+PTX"
};

}  // namespace opforge::devices
