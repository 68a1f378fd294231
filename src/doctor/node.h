#pragma once
/// What a node offers the wheels installed on it, as `opforge doctor --json` reports it under
/// "node" for `opforge verify WHEEL --nodes`: its C and C++ runtimes, CPU level, NVIDIA driver and
/// the CUDA that driver supports (the Python and torch are the report's "torch" part).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/machine.h"

namespace opforge::doctor {

/// The "node" part's format: a reader refuses (as "unknown") a report of a newer one.
inline constexpr int kNodeFormat = 1;

struct NodeInfo {
  std::string host;                ///< /proc/sys/kernel/hostname (else /etc/hostname)
  std::string machine;             ///< `uname -m` of the node (target::host_platform): "x86_64", "aarch64"
  std::optional<int> glibc_minor;  ///< newest GLIBC_2.X the system's libc.so.6 defines
  std::string glibcxx;             ///< newest GLIBCXX_ of the system's libstdc++.so.6 ("3.4.30")
  std::string cxxabi;              ///< its newest CXXABI_ ("1.3.14")
  int cpu_level = 0;               ///< x86-64 psABI level 1..4 of /proc/cpuinfo's flags; 0: unknown
  std::string driver_version;      ///< "580.65.06"; empty: no NVIDIA driver
  std::string driver_cuda;         ///< "13.0": what that driver supports (cuDriverGetVersion)
};

/// Reads the node `m` runs on.
NodeInfo read_node(probe::Machine m);

/// The psABI level whose every feature the first "flags" line of a /proc/cpuinfo text lists
/// (x86-64-v2: cx16 lahf_lm popcnt pni sse4_1 sse4_2 ssse3; -v3: avx avx2 bmi1 bmi2 f16c fma abm
/// movbe xsave; -v4: avx512f avx512bw avx512cd avx512dq avx512vl); 0 when there is no flags line.
int cpu_level_of_cpuinfo(std::string_view cpuinfo);

/// The driver's version from /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64 Kernel
/// Module  580.65.06  Sun Jul 27 ..."; the open modules say "Open Kernel Module for x86_64
/// 570.86.15 ..."); empty when the text names none.
std::string nvidia_driver_version(std::string_view text);

/// The newest of `versions` named `<prefix>_<dotted number>` ("GLIBCXX_3.4.30" → "3.4.30"); empty
/// when none is.
std::string newest_version(const std::vector<std::string>& versions, std::string_view prefix);

}  // namespace opforge::doctor
