#pragma once
/// `opforge __nvcc RULE ARGS...`: what every nvcc wrapper script runs (wrappers.h, nvcc_wrapper).
/// Not a command for people: main() hands it over before parsing any flags.
#include <string>
#include <string_view>
#include <vector>

#include "probe/machine.h"

namespace opforge::compile {

inline constexpr std::string_view kNvccCommand = "__nvcc";

/// Reads the rule (RULE, a rule.json beside the script), rewrites ARGS by it (rewrite_nvcc),
/// appends what the project asked for to OPFORGE_NVCC_ARCH_LOG, and runs nvcc (or the launcher)
/// with this process's output and environment. Returns its exit status; 1 when a compile asks only
/// for GPUs the plan lacks, 2 when the rule cannot be read, 127 when nvcc cannot be run.
int run_nvcc(probe::Machine m, const std::vector<std::string>& args);

}  // namespace opforge::compile
