#pragma once
/// doctor::Report as `opforge doctor --json` prints it, and as text: the same data, two renderings
/// (the text is made from the JSON, so the two never disagree).
#include <string>

#include <nlohmann/json.hpp>

#include "doctor/doctor.h"

namespace opforge::doctor {

nlohmann::json to_json(const Report& report);
/// The text `opforge doctor` prints, from to_json()'s object.
std::string to_text(const nlohmann::json& report);

}  // namespace opforge::doctor
