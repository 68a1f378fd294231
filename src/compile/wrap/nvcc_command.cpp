/// `opforge __nvcc` (compile/wrap/nvcc_command.h).
#include "compile/wrap/nvcc_command.h"

#include <iostream>

#include "compile/wrap/nvcc_args.h"
#include "settings/settings.h"

namespace opforge::compile {

int run_nvcc(probe::Machine m, const std::vector<std::string>& args) {
  if (args.empty()) {
    std::cerr << "opforge " << kNvccCommand << ": usage: opforge " << kNvccCommand << " RULE [NVCC-ARGS...]\n";
    return 2;
  }
  // A rule is a few hundred bytes: anything far larger is not one.
  constexpr std::size_t kMaxRule = 1u << 20;
  auto text = m.fs.read_file(args[0], kMaxRule);
  if (!text) {
    std::cerr << "opforge: the nvcc wrapper's rule " << args[0] << " cannot be read: " << text.error().render()
              << "\n  hint: build again: opforge writes it with its wrapper\n";
    return 2;
  }
  auto rule = parse_rule_json(*text, args[0]);
  if (!rule) {
    std::cerr << "opforge: " << rule.error().render() << "\n";
    return 2;
  }
  const auto call = rewrite_nvcc(std::vector<std::string>(args.begin() + 1, args.end()), *rule);
  if (!call.asked.empty())
    if (auto log = settings::nvcc_arch_log(m.env)) (void)m.fs.append_file(*log, call.asked + "\n");
  if (!call.error.empty()) {
    std::cerr << call.error << "\n";
    return 1;
  }
  probe::Command c{.argv = call.argv, .output = probe::Output::inherit};
  auto r = m.proc.run(c);
  if (!r) {
    std::cerr << "opforge: cannot run " << call.argv.front() << ": " << r.error().render() << "\n";
    return 127;
  }
  return r->signal ? 128 + r->signal : r->exit_code;
}

}  // namespace opforge::compile
