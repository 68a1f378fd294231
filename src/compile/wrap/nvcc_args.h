#pragma once
/// The nvcc wrapper's rewrite of a command line, as a pure function: what `opforge __nvcc` (the
/// command every nvcc wrapper script runs) does to the project's nvcc arguments before it runs
/// nvcc. One model, testable without a shell: the wrapper script only names this rule's settings.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "util/error.h"
#include "util/json.h"

namespace opforge::compile {

/// An argument the wrappers rewrite before the compiler sees it (a cross-build: the build torch's
/// folders → the target torch's). `from` → `to` in -I<from>, -isystem<from>, -L<from> and <from>
/// alone; with `prefix`, also in <from>/... (and -isystem).
struct ArgRewrite {
  std::string from, to;
  bool prefix = true;
};

/// Every argument of `args` with `rewrites` applied (the first that matches an argument wins).
std::vector<std::string> rewrite_args(const std::vector<std::string>& args, const std::vector<ArgRewrite>& rewrites);

/// What the nvcc wrapper does (compile/wrap/wrappers.h, nvcc_wrapper, says why each one).
struct NvccRule {
  std::filesystem::path nvcc{};        ///< the toolkit's nvcc
  std::vector<std::string> gencode{};  ///< the plan's -gencode options in place of the project's; empty: kept
  bool random_seed = false;            ///< -frandom-seed=<output's file name> unless the project gives one
  bool stable_names = false;           ///< -Xcicc/-Xcudafe=--orig_src_path_name=<output's file name>
  std::string launcher{};              ///< sccache: each compile (-c) runs as `<launcher> <nvcc> ...`
  std::filesystem::path ccbin{};       ///< with a launcher: the host compiler nvcc runs unless the project names one
  std::filesystem::path host_dir{};    ///< with a launcher: a -ccbin into this folder (the host wrappers) is dropped
  std::vector<ArgRewrite> rewrites{};
};

struct NvccCall {
  std::vector<std::string> argv;  ///< what runs: [launcher] nvcc args...
  std::string asked;  ///< the project's architecture options, " "-led each (the arch log's line); "" for none
  std::string error;  ///< non-empty: nothing runs (a compile for GPUs the plan lacks)
};

/// The command nvcc `args` become under `rule`.
NvccCall rewrite_nvcc(const std::vector<std::string>& args, const NvccRule& rule);

/// What both rules' files share: a rule's text as a JSON object whose string member `key` is set
/// (else bad_input naming `what`, the file, and `kind`, the wrapper), and its rewrites both ways.
Result<nlohmann::json> rule_object(std::string_view text, std::string_view what, std::string_view key,
                                   std::string_view kind);
nlohmann::json rewrites_json(const std::vector<ArgRewrite>& rewrites);
std::vector<ArgRewrite> rule_rewrites(const nlohmann::json& rule);

/// NVCC_PREPEND_FLAGS without its host compiler (`-ccbin X`, `-ccbin=X`, `--compiler-bindir X`,
/// `--compiler-bindir=X`) when the command line `argv` names one of its own: nvcc takes one, and
/// warns "incompatible redefinition for option 'compiler-bindir'" at two (torch's cpp_extension
/// adds `-ccbin $CC`, opforge's environment names the same compiler). nullopt when nothing changes.
std::optional<std::string> prepend_flags_for(std::string_view prepend, const std::vector<std::string>& argv);

/// The rule as the wrapper stores it beside its script (JSON), and back; bad_input names `what`.
std::string rule_json(const NvccRule& rule);
Result<NvccRule> parse_rule_json(std::string_view text, std::string_view what);

}  // namespace opforge::compile
