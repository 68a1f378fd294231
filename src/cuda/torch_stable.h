#pragma once
/// Which torch release first offers each function of torch's stable C ABI, read from the version
/// guards in torch's own headers (`#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_12_0` around the
/// declarations added in 2.12): what the oldest torch an extension of that ABI loads with is.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "probe/machine.h"

namespace opforge::cuda {

using Release = std::pair<int, int>;  ///< (2, 12)

struct StableAbi {
  /// Function → the release whose guard declares it; {0, 0} for one declared outside any guard
  /// (older than the versioned stable ABI).
  std::map<std::string, Release> introduced;
  /// The oldest release the headers name (TORCH_VERSION_2_10_0): what an unguarded function counts as.
  std::optional<Release> oldest;
};

/// Adds one header's AOTI_TORCH_EXPORT declarations and TORCH_VERSION_X_Y_Z definitions. Pure.
void parse_stable_header(std::string_view text, StableAbi& abi);

/// Reads the stable ABI's headers of the torch in `torch_dir` (<torch_dir>/include/torch/csrc/:
/// stable/version.h, stable/c/shim.h, inductor/aoti_torch/c/shim*.h and
/// inductor/aoti_torch/generated/c_shim_*.h). Empty when there are none (a torch before 2.10).
StableAbi read_stable_abi(const probe::FileSystem& fs, const std::filesystem::path& torch_dir);

/// The oldest release that has every one of `symbols` (the stable ABI functions a library
/// needs), and the symbol that decided it; nullopt with `missing` set when one is not in the
/// headers (then only the torch it was built with can be promised).
struct StableFloor {
  std::optional<Release> release;
  std::string decided_by;  ///< the symbol of the newest release
  std::string missing;     ///< a symbol the headers do not declare
};
StableFloor stable_floor(const StableAbi& abi, const std::vector<std::string>& symbols);

}  // namespace opforge::cuda
