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

namespace {

/// The value of `'KEY': '...'` in a _sysconfigdata module's text (a Python dict literal).
std::string sysconfig_value(std::string_view text, std::string_view key) {
  const std::string needle = "'" + std::string(key) + "': '";
  const auto at = text.find(needle);
  if (at == std::string_view::npos) return {};
  const auto start = at + needle.size();
  const auto end = text.find('\'', start);
  return end == std::string_view::npos ? std::string() : std::string(text.substr(start, end - start));
}

}  // namespace

Status resolve_cross_command(probe::Machine m, const Options& opts, Plan& plan) {
  if (!plan.cross() || !recipe::project_build(plan.recipe)) return {};
  const target::Platform& p = *plan.platform;
  const auto probe = cuda::read_python(m, plan.python);
  if (!probe || !probe->version)
    return unsatisfied("a cross-build for " + std::string(p.name) + " runs the project's command with " + plan.python +
                           ", which could not be run",
                       "set [build] python (or OPFORGE_PYTHON) to the Python the project builds with");
  const auto [major, minor] = *probe->version;
  const std::string version = std::to_string(major) + "." + std::to_string(minor);
  // Debian's name: _sysconfigdata_<abiflags>_<sys.platform>_<multiarch>, abiflags empty since 3.8.
  Plan::CrossCommand cc;
  cc.sysconfig = "_sysconfigdata__linux_" + std::string(p.triple);
  cc.sysconfig_file = fs::path(probe->stdlib) / (cc.sysconfig + ".py");
  cc.host_platform = "linux-" + std::string(p.name);
  const std::string packages = "libpython" + version + "-dev:" + std::string(p.debian_arch);
  const std::string how = "dpkg --add-architecture " + std::string(p.debian_arch) +
                          " && apt-get update && apt-get install " + packages + " (Debian's Python " + version +
                          " for " + std::string(p.name) + ": its configuration module and headers)";
  std::optional<std::string> text;
  if (!probe->stdlib.empty())
    if (auto read = m.fs.read_file(cc.sysconfig_file, 1 << 20)) text = std::move(*read);
  if (!text)
    return unsatisfied(plan.python + " (Python " + version + ") has no configuration for " + std::string(p.name) +
                           ": " +
                           (probe->stdlib.empty() ? std::string("its stdlib folder is unknown")
                                                  : cc.sysconfig_file.string() + " is missing") +
                           "; setup.py takes the extension suffix and the platform tag from it",
                       how + (probe->stdlib.starts_with("/usr/lib/")
                                  ? std::string()
                                  : "; and build with Debian's own /usr/bin/python" + version +
                                        " (or a venv made with it): a Python of another origin (pyenv, conda) reads "
                                        "only its own stdlib, " +
                                        probe->stdlib));
  cc.ext_suffix = sysconfig_value(*text, "EXT_SUFFIX");
  if (cc.ext_suffix.find(std::string(p.triple)) == std::string::npos)
    return unsatisfied(
        cc.sysconfig_file.string() + " says EXT_SUFFIX '" + cc.ext_suffix + "', not one for " + std::string(p.triple),
        how);
  if (!probe->include.empty() &&
      m.fs.resolved_type(fs::path(probe->include) / "Python.h") == probe::FileType::regular) {
    if (auto missing = cross_pyconfig(m, plan, fs::path(probe->include), minor); !missing.empty())
      return unsatisfied("python headers for " + std::string(p.name) + ": " + missing, how);
  } else {
    return unsatisfied("python headers: not found for " + plan.python + " (" + probe->include + "/Python.h)", how);
  }
  plan.notes.push_back("cross: the command runs with this machine's " + plan.python + " (Python " + version +
                       ") configured as " + std::string(p.name) + "'s (" + cc.sysconfig + ": " + cc.ext_suffix +
                       ", platform " + cc.host_platform + "), its compilers the " + std::string(p.name) + " ones");
  plan.cross_command = std::move(cc);
  const auto& torch = plan.cuda.torch;
  if (!torch || !torch->torch_version) return {};
  const fs::path cache = cache_dir(m, opts);
  auto t = opts.fetch_toolkit
               ? cuda::provision_target_torch(m, *torch->torch_version, {major, minor}, p, cache, plan.python,
                                              opts.on_progress)
               : cuda::describe_target_torch(m, *torch->torch_version, {major, minor}, p, cache, plan.python);
  if (!t) return opforge::unexpected(t.error());
  // An extension built against one CUDA major does not load with a torch of another.
  if (torch->cuda && !t->cuda.empty())
    if (auto target_cuda = parse_version(t->cuda); target_cuda && target_cuda->major != torch->cuda->major)
      return unsatisfied("torch " + *torch->torch_version + " here is built for CUDA " + torch->cuda->str() +
                             ", PyPI's " + t->requirement + " for " + std::string(p.name) + " for CUDA " + t->cuda,
                         "build with a torch of CUDA " + std::to_string(target_cuda->major) +
                             " (PyPI's default build of that release)");
  plan.notes.push_back("cross: torch for " + std::string(p.name) + ": " + t->requirement + " from PyPI" +
                       (t->cuda.empty() ? std::string() : " (CUDA " + t->cuda + ")") + " in " + t->dir.string() +
                       (t->present || t->fetched ? "" : ", fetched by the build (not there yet)") +
                       ": its headers and libraries in place of " + torch->torch_dir.string() + "'s");
  plan.target_torch = std::move(*t);
  return {};
}

}  // namespace opforge::plan
