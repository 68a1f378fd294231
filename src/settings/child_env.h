#pragma once
/// The one way a child's environment is built: the table's share of the caller's environment for
/// that child (child_environment, the Reach column), then opforge's own variables on top, a layer at
/// a time. Every child opforge starts with an environment of its own (a project's command, ninja,
/// sccache's server and test compile, one DeepSpeed op's compile) gets it from here, so the rules
/// (what a child never sees, how flags and search paths are extended) are written once.
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

#include "settings/settings.h"

namespace opforge::settings {

class ChildEnv {
 public:
  using Vars = std::map<std::string, std::string>;

  /// What the table gives `who` of the caller's environment.
  ChildEnv(const probe::Environment& env, Child who) : vars_(child_environment(env, who)) {}
  /// From an environment made already from the table (a command's, for one of its steps), or a
  /// test's.
  explicit ChildEnv(Vars vars) : vars_(std::move(vars)) {}

  ChildEnv& set(const std::string& name, std::string value) {
    vars_[name] = std::move(value);
    return *this;
  }
  /// `name` = `value` unless the layers below set it already.
  ChildEnv& set_default(const std::string& name, std::string value) {
    vars_.try_emplace(name, std::move(value));
    return *this;
  }
  /// Every variable of `vars` over what is there.
  ChildEnv& layer(const Vars& vars) {
    for (const auto& [k, v] : vars) vars_[k] = v;
    return *this;
  }
  /// Only `names` of `vars` (those `vars` has) over what is there.
  ChildEnv& layer(const Vars& vars, std::initializer_list<std::string_view> names);
  /// Flags (a space-separated list, as CFLAGS, NVCC_APPEND_FLAGS, CMAKE_ARGS): `flags` after the
  /// ones there.
  ChildEnv& append_flags(const std::string& name, const std::string& flags);
  /// A search path (':'-separated, as PATH): `dir` before the folders there.
  ChildEnv& prepend_path(const std::string& name, const std::string& dir);
  ChildEnv& erase(const std::string& name) {
    vars_.erase(name);
    return *this;
  }

  bool has(const std::string& name) const { return vars_.contains(name); }
  /// The value, or "" when unset.
  std::string value(const std::string& name) const;
  const Vars& vars() const& { return vars_; }
  Vars vars() && { return std::move(vars_); }

 private:
  Vars vars_;
};

}  // namespace opforge::settings
