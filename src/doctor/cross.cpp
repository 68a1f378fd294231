/// `opforge doctor`'s cross-build section: for each machine this one builds for besides itself,
/// what a cross-build needs, whether it is here, and the Debian packages that add what is missing.
#include <set>

#include "cuda/target_files.h"
#include "cuda/torch.h"
#include "doctor/doctor.h"
#include "settings/settings.h"
#include "target/platform.h"
#include "util/strings.h"

namespace opforge::doctor {

namespace {

std::string on_path(probe::Machine m, const std::string& name) {
  auto where = probe::find_on_path(m.fs, name, settings::path(m.env));
  return where ? where->string() : std::string();
}

std::string file_if_there(probe::Machine m, const fs::path& p) {
  return m.fs.resolved_type(p) == probe::FileType::regular ? p.string() : std::string();
}

}  // namespace

std::vector<CrossReport> examine_cross(probe::Machine m, const std::string& python,
                                       const std::optional<cuda::TorchInfo>& torch, const cuda::Toolkit* tk) {
  std::vector<CrossReport> out;
  const auto py = cuda::read_python(m, python);
  const fs::path cache = settings::cache_dir(m.env);
  for (const auto& p : target::platforms()) {
    if (&p == &target::host_platform()) continue;
    CrossReport r;
    r.platform = std::string(p.name);
    const std::string triple(p.triple), arch(p.debian_arch);
    const std::string every = "every cross-build for " + r.platform;
    r.needs.push_back({"C++ compiler", triple + "-g++", on_path(m, triple + "-g++"), std::string(p.cross_gxx_package),
                       every + " (nvcc's host compiler too)"});
    r.needs.push_back({"strip", triple + "-strip", on_path(m, triple + "-strip"), "binutils-" + triple,
                       every + " (the wheel's libraries are stripped)"});
    r.needs.push_back({"libaio", "/usr/lib/" + triple + "/libaio.so",
                       file_if_there(m, "/usr/lib/" + triple + "/libaio.so"), "libaio-dev:" + arch, "the aio op"});
    if (py && py->version && !py->stdlib.empty()) {
      const std::string version = std::to_string(py->version->first) + "." + std::to_string(py->version->second);
      const std::string pkg = "libpython" + version + "-dev:" + arch;
      const std::string why = "setup.py projects (a command build with " + python + ") and the ops' Python extensions";
      const fs::path sysconfig = fs::path(py->stdlib) / ("_sysconfigdata__linux_" + triple + ".py");
      // Only Debian's own Python reads Debian's multiarch files (pyenv's, conda's have their own stdlib).
      const bool debian = py->stdlib.starts_with("/usr/lib/");
      r.needs.push_back({"Python " + version + " configuration", sysconfig.string(), file_if_there(m, sysconfig), pkg,
                         "setup.py projects (a command build with " + python + ")" +
                             (debian ? std::string()
                                     : "; Debian's own Python " + version + " (/usr/bin/python" + version +
                                           ", or a venv made with it) has it")});
      const fs::path pyconfig = fs::path("/usr/include") / triple / ("python" + version) / "pyconfig.h";
      r.needs.push_back({"Python " + version + " headers", pyconfig.string(), file_if_there(m, pyconfig), pkg, why});
    }
    r.needs.push_back({"emulator", std::string(p.qemu), on_path(m, std::string(p.qemu)), "qemu-user-static",
                       "running " + r.platform + " code here to check it (not the build itself)"});
    // From PyPI, by the build itself, into the cache: shown with whether they are cached.
    if (tk)
      if (auto t = cuda::describe_target_files(m, *tk, p, cache, python))
        r.needs.push_back({"CUDA runtime", t->requirement, t->present ? t->dir.string() : std::string(), "",
                           "CUDA code (fetched from PyPI by `opforge build` into the cache)"});
    if (torch && torch->torch_version && py && py->version)
      if (auto t = cuda::describe_target_torch(m, *torch->torch_version, *py->version, p, cache, python))
        r.needs.push_back({"torch", t->requirement + " (" + t->python_tag + ")", t->present ? t->dir.string() : "", "",
                           "torch extensions (fetched from PyPI by `opforge build` into the cache)"});
    std::set<std::string> missing;
    bool foreign = false;
    for (const auto& n : r.needs)
      if (n.found.empty() && !n.package.empty()) {
        missing.insert(n.package);
        foreign = foreign || n.package.ends_with(":" + arch);
      }
    if (!missing.empty())
      r.install = (foreign ? "dpkg --add-architecture " + arch + " && apt-get update && " : std::string()) +
                  "apt-get install " + strings::join(std::vector<std::string>(missing.begin(), missing.end()), " ");
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace opforge::doctor
