#pragma once
/// GPU architectures in TORCH_CUDA_ARCH_LIST syntax (docs/reference.md §3) and the GPUs of the machine.
#include <optional>
#include <string>
#include <vector>

namespace opforge::devices {

struct Arch {
  int major = 0;
  int minor = 0;
  char suffix = 0;   ///< 0, 'a' (arch-specific) or 'f' (family)
  bool ptx = false;  ///< +PTX: also embed compute_XY PTX
  auto operator<=>(const Arch&) const = default;
  std::string str() const;          ///< "9.0a+PTX"
  std::string sm() const;           ///< "90a"
  /// nvcc flags: -gencode=arch=compute_90a,code=sm_90a (and code=compute_90a for +PTX)
  std::vector<std::string> gencode() const;
};

struct Gpu {
  int index = 0;
  std::string name;
  int major = 0;
  int minor = 0;
  std::string uuid;
};

struct ArchDecision {
  std::vector<Arch> arches;         ///< sorted, deduplicated, what nvcc accepts
  std::string source;               ///< "TORCH_CUDA_ARCH_LIST", "recipe [arch] list", "GPUs", "fallback"
  std::vector<Gpu> gpus;            ///< as read
  std::string gpu_reader;           ///< "driver API", "nvidia-smi", "none"
  std::vector<std::pair<std::string, std::string>> dropped;  ///< entry → why
  std::vector<std::string> notes;
  std::string str() const;          ///< "8.0;9.0+PTX"
};

}  // namespace opforge::devices
