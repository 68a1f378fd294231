// The real resolution stages; tests replace them to describe machines that cannot exist here.
#include "compiler/resolve.h"
#include "cuda/resolve.h"
#include "devices/resolve.h"
#include "plan/plan.h"

namespace opforge::plan {

Resolvers default_resolvers() {
  Resolvers r;
  r.cuda = [](probe::Machine m, const std::string& spec, const std::string& python) {
    return cuda::resolve(m, spec, python);
  };
  r.cuda_exports = [](const cuda::Toolkit& tk, const probe::Environment& env) { return cuda::exports(tk, env); };
  r.host = [](probe::Machine m, const cuda::Toolkit& tk, const std::string& host, bool allow, const fs::path& shim) {
    return compiler::resolve(m, tk, host, allow, shim);
  };
  r.arch = [](probe::Machine m, const cuda::Toolkit& tk, const std::string& list, const std::string& fallback) {
    return devices::resolve(m, tk, list, fallback);
  };
  return r;
}

}  // namespace opforge::plan
