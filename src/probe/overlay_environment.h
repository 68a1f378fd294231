#pragma once
/// An environment seen through overrides: set some variables, hide others. Used to rebuild under a
/// build record's environment, to plan for a cluster's merged arch list and to build a matrix
/// cell. OverlayMachine makes the overlay reach every child too: a Command without its own
/// environment gets the machine's (and argv[0] is looked up on that PATH), never opforge's own.
#include <set>

#include "probe/machine.h"

namespace opforge::probe {

/// Names that a child given the machine's environment implicitly (a Command without its own env,
/// EnvironmentRunner) never gets: opforge's secrets (settings::secret_variables, which the CLI
/// hands over at start; probe/ cannot read the settings table, which sits above it).
void keep_from_children(std::vector<std::string> names);
/// `env` without those names.
std::map<std::string, std::string> without_kept(std::map<std::string, std::string> env);

class OverlayEnvironment final : public Environment {
 public:
  /// `hidden(name)` true: the variable reads as unset unless `set` gives it a value.
  OverlayEnvironment(const Environment& base, std::map<std::string, std::string> set,
                     std::function<bool(const std::string&)> hidden = {})
      : base_(base), set_(std::move(set)), hidden_(std::move(hidden)) {}
  std::optional<std::string> get(const std::string& name) const override {
    if (auto it = set_.find(name); it != set_.end()) return it->second;
    if (hidden_ && hidden_(name)) return std::nullopt;
    return base_.get(name);
  }
  std::map<std::string, std::string> all() const override {
    auto out = base_.all();
    if (hidden_) std::erase_if(out, [&](auto& kv) { return hidden_(kv.first); });
    for (auto& [k, v] : set_) out[k] = v;
    return out;
  }
  unsigned cpu_count() const override { return base_.cpu_count(); }

 private:
  const Environment& base_;
  std::map<std::string, std::string> set_;
  std::function<bool(const std::string&)> hidden_;
};

/// Runs every command with `env`'s variables when the command names none.
class EnvironmentRunner final : public ProcessRunner {
 public:
  EnvironmentRunner(ProcessRunner& inner, const Environment& env) : inner_(inner), env_(env) {}
  Result<ProcessResult> run(const Command& command) override {
    if (command.env) return inner_.run(command);
    Command with = command;
    with.env = without_kept(env_.all());
    return inner_.run(with);
  }

 private:
  ProcessRunner& inner_;
  const Environment& env_;
};

/// `base` seen through an OverlayEnvironment, its children included. Not copyable: machine()
/// refers to it.
class OverlayMachine {
 public:
  OverlayMachine(Machine base, std::map<std::string, std::string> set,
                 std::function<bool(const std::string&)> hidden = {})
      : base_(base), env_(base.env, std::move(set), std::move(hidden)), proc_(base.proc, env_) {}
  OverlayMachine(const OverlayMachine&) = delete;
  OverlayMachine& operator=(const OverlayMachine&) = delete;
  Machine machine() { return Machine{base_.fs, proc_, env_, base_.dl}; }

 private:
  Machine base_;
  OverlayEnvironment env_;
  EnvironmentRunner proc_;
};

}  // namespace opforge::probe
