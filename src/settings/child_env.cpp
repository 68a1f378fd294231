#include "settings/child_env.h"

namespace opforge::settings {

ChildEnv& ChildEnv::layer(const Vars& vars, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names)
    if (auto it = vars.find(std::string(n)); it != vars.end()) vars_[it->first] = it->second;
  return *this;
}

ChildEnv& ChildEnv::append_flags(const std::string& name, const std::string& flags) {
  auto& v = vars_[name];
  v = v.empty() ? flags : v + " " + flags;
  return *this;
}

ChildEnv& ChildEnv::prepend_path(const std::string& name, const std::string& dir) {
  auto& v = vars_[name];
  v = v.empty() ? dir : dir + ":" + v;
  return *this;
}

std::string ChildEnv::value(const std::string& name) const {
  auto it = vars_.find(name);
  return it == vars_.end() ? std::string() : it->second;
}

}  // namespace opforge::settings
