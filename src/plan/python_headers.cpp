/// plan::make's Python headers: the folder holding Python.h that the ops' stable-ABI Python
/// extensions compile against, or why they are left out.
#include <algorithm>

#include "cuda/torch.h"
#include "plan/stages.h"
#include "util/strings.h"

namespace opforge::plan {

namespace {

/// A cross-build against Debian's headers: their pyconfig.h only includes the machine's own
/// (`#include <x86_64-linux-gnu/python3.11/pyconfig.h>`), which the cross compiler looks for in
/// its own system folders, not /usr/include. When the target's is installed
/// (libpython3.X-dev:<arch>), /usr/include is searched after the system folders
/// (python_arch_include); else what is missing. Empty for any other build or header.
std::string cross_pyconfig(probe::Machine m, Plan& plan, const fs::path& dir, int minor) {
  if (!plan.cross()) return {};
  auto text = m.fs.read_file(dir / "pyconfig.h");
  const std::string own = std::string(target::host_platform().triple) + "/";
  if (!text || text->find("#  include <" + own) == std::string::npos) return {};
  const std::string version = "python3." + std::to_string(minor);
  const fs::path base = dir.parent_path();
  const fs::path target = base / std::string(plan.platform->triple) / version / "pyconfig.h";
  if (m.fs.resolved_type(target) == probe::FileType::regular) {
    plan.python_arch_include = base;
    return {};
  }
  return target.string() + " is missing (install lib" + version + "-dev:" + std::string(plan.platform->debian_arch) +
         ", the " + std::string(plan.platform->name) + " half of Debian's Python headers)";
}

}  // namespace

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
  } else if (minor >= 0 && !dir.empty() && m.fs.resolved_type(fs::path(dir) / "Python.h") == probe::FileType::regular &&
             (missing = cross_pyconfig(m, plan, fs::path(dir), minor)).empty()) {
    plan.python_include = dir;
    plan.notes.push_back("python headers: " + dir + " (" + which + ", stable ABI 3." + std::to_string(floor) + ")");
    return {};
  } else if (missing.empty()) {
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
