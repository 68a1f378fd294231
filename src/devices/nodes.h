#pragma once
/// Heterogeneous clusters: the `opforge doctor --json` reports of several nodes merged into one arch
/// list that covers every GPU kind among them.
#include <filesystem>
#include <string>
#include <vector>

#include "devices/arch.h"
#include "probe/machine.h"
#include "util/error.h"

namespace opforge::devices {

namespace fs = std::filesystem;

struct NodeReport {
  fs::path file;          ///< the report it came from
  std::vector<Gpu> gpus;  ///< as listed in the report
};

struct NodesSummary {
  std::vector<NodeReport> nodes;  ///< in the order given
  /// Every distinct compute capability, sorted; the newest also gets +PTX so that GPUs newer than
  /// any node can JIT it. Empty when no report lists a GPU.
  std::vector<target::Arch> arches;
  std::string arch_list;              ///< TORCH_CUDA_ARCH_LIST form, e.g. "8.0;9.0+PTX"
  std::vector<std::string> warnings;  ///< mixed generations, nodes without GPUs
};

/// Reads each report (found's `doctor --json`: {"gpus": {"devices": [{"index", "name",
/// "capability": "9.0"}]}}; a bare `"gpus": [{"index", "name", "compute_capability": "9.0"}]` is
/// accepted too) and unions the GPU kinds. Errors (bad_input): a missing or unreadable file, bad
/// JSON, a capability that is not MAJOR.MINOR — each naming the file and the GPU.
Result<NodesSummary> merge_nodes(probe::FileSystem& fs, const std::vector<fs::path>& reports);

/// Pure part of merge_nodes, for one report's text.
Result<NodeReport> parse_node_report(const fs::path& file, std::string_view json_text);

}  // namespace opforge::devices
