#pragma once
/// `opforge __nvcc RULE ARGS...` and `opforge __host RULE ARGS...`: what every nvcc and host
/// wrapper script runs (wrappers.h). The scripts only name a rule (a JSON file beside them); the
/// rewrite itself is one pure function each (nvcc_args.h, host_args.h). Not commands for people:
/// hidden rows of the command table (cli/hidden.cpp), handed their arguments unparsed.
#include <string>
#include <string_view>
#include <vector>

#include "probe/machine.h"

namespace opforge::compile {

inline constexpr std::string_view kNvccCommand = "__nvcc";
inline constexpr std::string_view kHostCommand = "__host";

/// Reads the rule (RULE, a rule.json beside the script), rewrites ARGS by it (rewrite_nvcc),
/// appends what the project asked for to OPFORGE_NVCC_ARCH_LOG, and runs nvcc (or the launcher)
/// with this process's output and environment. Returns its exit status; 1 when a compile asks only
/// for GPUs the plan lacks, 2 when the rule cannot be read, 127 when nvcc cannot be run.
int run_nvcc(probe::Machine m, const std::vector<std::string>& args);

/// Reads the rule, rewrites ARGS by it (rewrite_host) and runs the compiler: a C++ compile with a
/// precompiled-header folder in the rule through `__host-compile` (compile/pch/pch.h), in this
/// process. The same exit statuses as run_nvcc (but 1).
int run_host(probe::Machine m, const std::vector<std::string>& args);

}  // namespace opforge::compile
