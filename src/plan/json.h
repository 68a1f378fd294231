#pragma once
/// The plan as JSON (for `opforge plan --json`, `opforge env --format json` and tools).
#include <nlohmann/json.hpp>

#include "plan/plan.h"

namespace opforge::plan {

nlohmann::json to_json(const Plan& plan);

}  // namespace opforge::plan
