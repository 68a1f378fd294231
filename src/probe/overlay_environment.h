#pragma once
/// An environment seen through overrides: set some variables, hide others. Used to rebuild under a
/// build record's environment and to plan for a cluster's merged arch list.
#include <set>

#include "probe/machine.h"

namespace opforge::probe {

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

}  // namespace opforge::probe
