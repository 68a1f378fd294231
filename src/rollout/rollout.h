#pragma once
/// `opforge verify WHEEL --nodes REPORT…`: will the wheel run on each node of a fleet, and if not,
/// why — answered offline, before anything is installed, from what the wheel holds (its tags, ELF
/// files, GPU code, torch requirement) and what each node's `opforge doctor --json` report says
/// (GPUs, NVIDIA driver, glibc, libstdc++, CPU level, Python, torch).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devices/arch.h"
#include "probe/machine.h"
#include "util/error.h"
#include "util/version.h"
#include "wheel/wheel.h"

namespace opforge::rollout {

namespace fs = std::filesystem;

/// What a wheel needs of the node it lands on.
struct WheelNeeds {
  std::string filename;
  std::vector<std::string> python_tags, abi_tags, platforms;  ///< from the file name ("cp311", "abi3", ...)
  wheel::SystemNeeds system;                                  ///< newest glibc / libstdc++ versions its ELF files use
  int cpu_level = 0;                                          ///< x86-64 psABI level its code needs; 0: no x86 code
  std::string torch;  ///< Requires-Dist on torch without the name (">=2.12", "==2.15.*"); empty: none
  /// The CUDA that compiled its GPU code ("13.0", or "13" when only the major is known): from the
  /// build record, else a CUDA library it needs, else its newest PTX; a variant wheel without
  /// either, its cuda_version_lower_bound. The checks word it the same whichever it came from.
  std::string cuda;
  struct GpuLibrary {
    std::string path;
    std::vector<wheel::FatbinImage> images;
  };
  std::vector<GpuLibrary> gpu_libraries;  ///< the ELF files that hold GPU code
};

/// Reads the wheel (as `inspect` does, same errors) and the build record beside it when there is
/// one (`<wheel>.opforge-record.json`: the toolkit's exact version).
Result<WheelNeeds> read_wheel_needs(const probe::FileSystem& fs, const fs::path& wheel);
/// The pure part: from an inspection and the record's toolkit version (empty: none).
WheelNeeds wheel_needs(const wheel::Inspection& in, const std::string& record_cuda);

/// One node as its report says it. A field the report lacks (an older opforge wrote it) or holds
/// in a shape opforge does not read stays nullopt, and `unknown_why` says why for the checks.
struct NodeFacts {
  fs::path report;
  std::string name;        ///< the host name, else the report's file name
  std::string unreadable;  ///< the whole report cannot be used (not JSON, a newer format): why
  std::optional<std::vector<devices::Gpu>> gpus;
  std::string gpu_reader;              ///< how doctor read them ("driver API", "none (...)")
  std::optional<std::string> machine;  ///< `uname -m`: "x86_64", "aarch64"
  std::optional<int> glibc_minor;
  std::optional<std::string> glibcxx, cxxabi;  ///< "" when the node has no libstdc++
  std::optional<int> cpu_level;
  std::optional<std::pair<int, int>> python;       ///< (3, 11)
  std::optional<std::string> torch;                ///< "2.15.0+cu132"; "" when torch is not installed
  std::optional<std::string> driver;               ///< "580.65.06"; "" when the node has no NVIDIA driver
  std::optional<Version> driver_cuda;              ///< what the driver supports (13.0)
  std::map<std::string, std::string> unknown_why;  ///< field → why it is not known
};

/// Reads one `doctor --json` report's text. Never fails: what cannot be read is unknown.
NodeFacts parse_node_facts(const fs::path& report, std::string_view text);

/// Reads a report of either kind: a `doctor --json` report (one node), or the `--json` report of
/// `python -m opforge_ops.nodecheck` (schema "opforge-nodecheck/1"), which gives one node per host
/// from its ranks' facts (GPUs, driver, Python, torch, and the runtime facts its newer versions add).
std::vector<NodeFacts> parse_node_reports(const fs::path& report, std::string_view text);

/// Every node of the report files (parse_node_reports each); bad_input naming a file that cannot be
/// read (16 MiB at most: a report is a few KiB), with how to make one.
Result<std::vector<NodeFacts>> read_node_reports(const probe::FileSystem& fs, const std::vector<std::string>& reports);

enum class Verdict { ok, fails, unknown };
std::string_view verdict_name(Verdict v);  ///< "ok", "fails", "unknown"

struct Check {
  std::string name;  ///< "gpu", "driver", "machine", "platform", "cpu", "python", "torch"
  Verdict verdict = Verdict::ok;
  std::string detail;
  bool operator==(const Check&) const = default;
};

struct NodeRow {
  std::string node;
  fs::path report;
  Verdict verdict = Verdict::ok;  ///< fails if a check fails, else unknown if one is, else ok
  std::vector<Check> checks;      ///< in the order above
};

/// Every check of `wheel` against `node`.
NodeRow check_node(const WheelNeeds& wheel, const NodeFacts& node);

/// The CUDA a node's driver supports, as the checks read it: the report's (the driver API's
/// answer), else its driver branch's (cuda_of_driver); nullopt when neither is known.
std::optional<Version> node_driver_cuda(const NodeFacts& node);

/// Why a node's report lists no GPU, in one wording for every check and note that says it.
std::string no_gpu_detail(const NodeFacts& node);

/// The NVIDIA driver a CUDA major needs (CUDA compatibility guide, minor-version compatibility):
/// 13 → "580", 12 → "525.60.13", 11 → "450.80.02"; nullopt for others.
std::optional<std::string> driver_floor(int cuda_major);
/// The CUDA release that introduced a PTX ISA version (PTX ISA release notes: 7.0 … 7.8 with 11.0
/// … 11.8, 8.0 … 8.5 with 12.0 … 12.5, 8.7 with 12.8, 8.8 with 12.9, 9.0 with 13.0); nullopt when
/// opforge does not know it.
std::optional<Version> cuda_of_ptx_isa(int major, int minor);
/// The CUDA version a driver branch supports (580 → 13.0, 570 → 12.8, …, 450 → 11.0): what a
/// report without the driver API's answer falls back to. nullopt for an unknown branch.
std::optional<Version> cuda_of_driver(const Version& driver);

}  // namespace opforge::rollout
