/// plan::make's Python headers: the folder holding Python.h that the ops' stable-ABI Python
/// extensions compile against, or why they are left out.
#include <algorithm>

#include "cuda/torch.h"
#include "plan/stages.h"
#include "util/strings.h"

namespace opforge::plan {

Status find_python_include(probe::Machine m, Plan& plan) {
  std::vector<std::string> wanting, required;
  int floor = 0;
  for (auto& d : plan.ops)
    if (d.builds() && d.manifest.python_extension) {
      wanting.push_back(d.manifest.name);
      if (d.required) required.push_back(d.manifest.name + " (" + d.requested_by + ")");
      floor = std::max(floor, d.manifest.python_extension->floor_minor);
    }
  if (wanting.empty()) return {};
  const std::string which = "the Python extensions of " + strings::join(wanting, ", ");
  // The probe read_torch runs (remembered in the cache folder): no Python start on a repeated plan.
  const auto probe = cuda::read_python(m, plan.python);
  const int minor = probe && probe->version && probe->version->first == 3 ? probe->version->second : -1;
  const std::string dir = probe ? probe->include : std::string();
  std::string missing;
  if (minor >= 0 && minor < floor) {
    missing = plan.python + " is Python 3." + std::to_string(minor) + ", older than the stable-ABI floor 3." +
              std::to_string(floor);
  } else if (minor >= 0 && !dir.empty() && m.fs.resolved_type(fs::path(dir) / "Python.h") == probe::FileType::regular) {
    plan.python_include = dir;
    plan.notes.push_back("python headers: " + dir + " (" + which + ", stable ABI 3." + std::to_string(floor) + ")");
    return {};
  } else {
    missing = "not found for " + plan.python + " (install python3-dev)";
  }
  if (!required.empty())
    return unsatisfied("python headers: " + missing + ", and " + which + " cannot be built without them; " +
                           strings::join(required, ", ") + " asked for the whole op",
                       "install the Python headers for " + plan.python +
                           ": python3-dev (apt), python3-devel (dnf, yum), inside the root when building with --root; "
                           "or ask for the op with \"auto\" to build it without its extension");
  plan.notes.push_back("python headers: " + missing + ": " + which + " are left out, their Python code does the work");
  return {};
}

}  // namespace opforge::plan
