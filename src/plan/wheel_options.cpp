// What the recipe and the plan decide of the wheel, whichever backend makes it: made once here,
// read by the native backend's wheel::Spec and the command backend's wheel::NormalizeOptions.
#include <algorithm>

#include "plan/plan.h"
#include "util/strings.h"

namespace opforge::plan {

std::string torch_pin(const std::string& v) {
  auto parts = strings::split(v, '.');
  if (parts.size() < 2 || parts[0].empty() || parts[1].empty()) return "";
  auto digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(parts[0]) || !digits(parts[1])) return "";
  return "torch==" + std::string(parts[0]) + "." + std::string(parts[1]) + ".*";
}

std::string torch_floor(const std::string& v) {
  const std::string pin = torch_pin(v);  // "torch==X.Y.*": the same checks of the version
  if (pin.empty()) return "";
  return "torch>=" + pin.substr(7, pin.size() - 9);
}

WheelOptions wheel_options(const Plan& plan) {
  WheelOptions out;
  out.version = plan.wheel_version;
  out.source_date_epoch = plan.source_date_epoch;
  out.glibc_floor = plan.recipe.wheel.glibc_floor;
  for (auto& req : plan.requires_dist)
    if (std::find(out.requires_dist.begin(), out.requires_dist.end(), req) == out.requires_dist.end())
      out.requires_dist.push_back(req);
  return out;
}

}  // namespace opforge::plan
