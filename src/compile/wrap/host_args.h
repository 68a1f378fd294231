#pragma once
/// The host-compiler wrappers' rewrite of a command line, as a pure function, beside the nvcc
/// wrapper's (nvcc_args.h): what `opforge __host` (the command every host wrapper script runs)
/// does to a compiler's arguments before it runs the compiler.
#include <filesystem>
#include <string>
#include <vector>

#include "compile/wrap/nvcc_args.h"
#include "util/error.h"

namespace opforge::compile {

/// What a host wrapper does (wrappers.h, host_wrappers, says why each one).
struct HostRule {
  std::filesystem::path compiler{};    ///< the compiler the plan chose (compiler::invocation's path)
  std::string gc_param{};              ///< gcc's "--param=ggc-min-heapsize=N" on every compile; "" for none
  std::string launcher{};              ///< sccache: each compile runs as `<launcher> <compiler> ...`
  std::vector<ArgRewrite> rewrites{};  ///< a cross-build's folders
  /// Non-empty: a C++ compile that includes torch/extension.h may start from the precompiled header
  /// stored here ([build] pch: `opforge __host-compile`, compile/pch/pch.h).
  std::filesystem::path pch_dir{};
};

struct HostCall {
  /// A compile (an argument `-c`): `[launcher] compiler ARGS [gc_param] -g0`; anything else (a
  /// link, `-dumpversion`): `compiler ARGS`. ARGS are rewritten first.
  std::vector<std::string> argv;
  bool compile = false;
  std::vector<std::string> args;  ///< the rewritten ARGS, with gc_param on a compile (what __host-compile gets)
};

HostCall rewrite_host(const std::vector<std::string>& args, const HostRule& rule);

/// The rule as the wrapper stores it beside its script (JSON), and back; bad_input names `what`.
std::string host_rule_json(const HostRule& rule);
Result<HostRule> parse_host_rule_json(std::string_view text, std::string_view what);

}  // namespace opforge::compile
