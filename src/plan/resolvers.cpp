// The real resolution stages, wired through __has_include so that the plan builds while the
// cuda/, compiler/ and devices/ stages are being written on the same branch.
#include "plan/plan.h"

#if __has_include("cuda/resolve.h")
#include "cuda/resolve.h"
#define OPFORGE_HAVE_CUDA 1
#endif
#if __has_include("compiler/resolve.h")
#include "compiler/resolve.h"
#define OPFORGE_HAVE_COMPILER 1
#endif
#if __has_include("devices/resolve.h")
#include "devices/resolve.h"
#define OPFORGE_HAVE_DEVICES 1
#endif

namespace opforge::plan {

Resolvers default_resolvers() {
  Resolvers r;
#ifdef OPFORGE_HAVE_CUDA
  r.cuda = [](probe::Machine m, const std::string& spec, const std::string& python) {
    return cuda::resolve(m, spec, python);
  };
  r.cuda_exports = [](const cuda::Toolkit& tk, const probe::Environment& env) {
    return cuda::exports(tk, env);
  };
#else
  r.cuda = [](probe::Machine, const std::string&, const std::string&) -> Result<cuda::Resolution> {
    return unsatisfied("CUDA toolkit resolution is not part of this build");
  };
#endif
#ifdef OPFORGE_HAVE_COMPILER
  r.host = [](probe::Machine m, const cuda::Toolkit& tk, const std::string& host, bool allow,
              const fs::path& shim) { return compiler::resolve(m, tk, host, allow, shim); };
#endif
#ifdef OPFORGE_HAVE_DEVICES
  r.arch = [](probe::Machine m, const cuda::Toolkit& tk, const std::string& list,
              const std::string& fallback) { return devices::resolve(m, tk, list, fallback); };
#endif
  r.check_arch_list = [](std::string_view text) { return recipe::check_arch_list(text); };
  return r;
}

}  // namespace opforge::plan
