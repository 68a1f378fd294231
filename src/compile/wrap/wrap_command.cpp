/// `opforge __nvcc` and `opforge __host` (compile/wrap/wrap_command.h).
#include "compile/wrap/wrap_command.h"

#include <iostream>

#include "compile/pch/pch.h"
#include "compile/wrap/host_args.h"
#include "compile/wrap/nvcc_args.h"
#include "settings/child_env.h"
#include "settings/settings.h"

namespace opforge::compile {

namespace {

/// The rule a wrapper names, parsed by `parse`; nullopt after saying why on stderr.
template <class Rule>
std::optional<Rule> read_rule(probe::Machine m, const std::vector<std::string>& args, std::string_view command,
                              std::string_view what, Result<Rule> (*parse)(std::string_view, std::string_view)) {
  if (args.empty()) {
    std::cerr << "opforge " << command << ": usage: opforge " << command << " RULE [ARGS...]\n";
    return std::nullopt;
  }
  // A rule is a few hundred bytes: anything far larger is not one.
  constexpr std::size_t kMaxRule = 1u << 20;
  auto text = m.fs.read_file(args[0], kMaxRule);
  if (!text) {
    std::cerr << "opforge: the " << what << " wrapper's rule " << args[0]
              << " cannot be read: " << text.error().render()
              << "\n  hint: build again: opforge writes it with its wrapper\n";
    return std::nullopt;
  }
  auto rule = parse(*text, args[0]);
  if (!rule) {
    std::cerr << "opforge: " << rule.error().render() << "\n";
    return std::nullopt;
  }
  return *rule;
}

/// Runs `argv` with this process's output and environment (or `env` when given): its exit status
/// (128 + a signal).
int run_inherited(probe::Machine m, const std::vector<std::string>& argv,
                  std::optional<std::map<std::string, std::string>> env = std::nullopt) {
  auto r = m.proc.run({.argv = argv, .env = std::move(env), .output = probe::Output::inherit});
  if (!r) {
    std::cerr << "opforge: cannot run " << argv.front() << ": " << r.error().render() << "\n";
    return 127;
  }
  return r->signal ? 128 + r->signal : r->exit_code;
}

}  // namespace

int run_host(probe::Machine m, const std::vector<std::string>& args) {
  auto rule = read_rule<HostRule>(m, args, kHostCommand, "host compiler", parse_host_rule_json);
  if (!rule) return 2;
  const auto call = rewrite_host(std::vector<std::string>(args.begin() + 1, args.end()), *rule);
  if (!call.compile || rule->pch_dir.empty()) return run_inherited(m, call.argv);
  std::vector<std::string> pch = {"--compiler", rule->compiler.string(), "--pch-dir", rule->pch_dir.string()};
  if (!rule->launcher.empty()) pch.insert(pch.end(), {"--launcher", rule->launcher});
  pch.push_back("--");
  pch.insert(pch.end(), call.args.begin(), call.args.end());
  return pch::host_compile(m, pch);
}

int run_nvcc(probe::Machine m, const std::vector<std::string>& args) {
  auto rule = read_rule<NvccRule>(m, args, kNvccCommand, "nvcc", parse_rule_json);
  if (!rule) return 2;
  const auto call = rewrite_nvcc(std::vector<std::string>(args.begin() + 1, args.end()), *rule);
  if (!call.asked.empty())
    if (auto log = settings::nvcc_arch_log(m.env)) (void)m.fs.append_file(*log, call.asked + "\n");
  if (!call.error.empty()) {
    std::cerr << call.error << "\n";
    return 1;
  }
  // One -ccbin: the command's own wins, and the environment's copy of it goes.
  if (auto prepend = settings::nvcc_prepend_flags(m.env))
    if (auto fewer = prepend_flags_for(*prepend, call.argv)) {
      settings::ChildEnv env(m.env, settings::Child::opforge);
      env.set("NVCC_PREPEND_FLAGS", *fewer);
      return run_inherited(m, call.argv, std::move(env).vars());
    }
  return run_inherited(m, call.argv);
}

}  // namespace opforge::compile
