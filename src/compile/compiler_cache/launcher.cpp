#include "compile/compiler_cache/launcher.h"

#include "compiler/host.h"
#include "settings/settings.h"
#include "util/hash.h"
#include "util/strings.h"

namespace opforge::compile {

namespace fs = std::filesystem;

CompileLauncher compile_launcher(const fs::path& cache_dir, const std::string& program) {
  CompileLauncher l;
  std::string keep;
  for (const auto& name : settings::compile_variables()) keep += " ${" + name + "+\"" + name + "=$" + name + "\"}";
  l.text =
      "#!/bin/sh\n"
      "# Written by opforge: " +
      program +
      " with only the variables a compile needs (the settings table's compile rows):\n"
      "# sccache sends a compile's environment with it to the build server that runs it. It reads\n"
      "# no configuration (SCCACHE_CONF=/dev/null): its client server has that.\n"
      "exec env -i" +
      keep + " SCCACHE_CONF=/dev/null " + strings::shell_quote(program) + " \"$@\"\n";
  l.path = cache_dir / "launch" / sha256_hex(l.text).substr(0, 16) / fs::path(program).filename();
  return l;
}

Status write_compile_launcher(probe::FileSystem& fs, const CompileLauncher& l) {
  return compiler::write_script(fs, l.path, l.text);
}

std::string wrapper_launcher(const plan::Plan& plan) {
  return plan.cache == recipe::Cache::sccache ? std::string(recipe::cache_kind(plan.cache).program) : std::string();
}

std::string wrapper_launch(const plan::Plan& plan, const fs::path& cache_dir) {
  const std::string program = wrapper_launcher(plan);
  if (program.empty() || cache_dir.empty()) return {};
  return compile_launcher(cache_dir, program).path.string();
}

}  // namespace opforge::compile
