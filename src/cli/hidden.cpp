// The hidden rows of the command table: what opforge's own wrapper scripts run in place of a
// compiler (compile/wrap/wrappers.h). Not listed in help, never a "did you mean"; their arguments
// are a compiler's, passed on as given.
#include "cli/command.h"
#include "compile/pch/pch.h"
#include "compile/wrap/wrap_command.h"

namespace opforge::cli {
namespace {

Registrar nvcc_command{
    {.name = std::string(compile::kNvccCommand),
     .description = "every nvcc wrapper script's command line",
     .hidden = [](const std::vector<std::string>& args) { return compile::run_nvcc(probe::real_machine(), args); }}};

Registrar host_command{
    {.name = std::string(compile::kHostCommand),
     .description = "every host compiler wrapper script's command line",
     .hidden = [](const std::vector<std::string>& args) { return compile::run_host(probe::real_machine(), args); }}};

// A command build's host wrappers hand each C++ compile to this one (compile/pch/pch.h).
Registrar host_compile_command{{.name = std::string(compile::pch::kCommand),
                                .description = "one host compile, with the precompiled torch header when it may",
                                .hidden = [](const std::vector<std::string>& args) {
                                  return compile::pch::host_compile(probe::real_machine(), args);
                                }}};

}  // namespace
}  // namespace opforge::cli
