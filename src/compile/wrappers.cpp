#include "compile/wrappers.h"

#include "compiler/host.h"
#include "ops/ops.h"
#include "settings/settings.h"
#include "util/hash.h"
#include "util/strings.h"

namespace opforge::compile {

NvccWrapper nvcc_wrapper(const fs::path& cache_dir, const fs::path& nvcc, const std::string& stamp) {
  NvccWrapper w;
  w.text =
      "#!/bin/sh\n"
      "# Written by opforge: the toolkit's nvcc without -lineinfo, whose line table records\n"
      "# each source file's modification time (the wheel's bytes would change with it).\n"
      "for a do\n"
      "  shift\n"
      "  case $a in -lineinfo|--generate-line-info) ;; *) set -- \"$@\" \"$a\" ;; esac\n"
      "done\n"
      "exec " +
      strings::shell_quote(nvcc.string()) + " \"$@\"\n";
  w.path = cache_dir / "nvcc" / sha256_hex(w.text + stamp).substr(0, 16) / "nvcc";
  return w;
}

std::optional<HostWrappers> host_wrappers(const probe::FileSystem& fs, const fs::path& cache_dir,
                                          const plan::Plan& plan) {
  if (!plan.host || cache_dir.empty()) return std::nullopt;
  const auto via = compiler::invocation(*plan.host);
  // The scripts run the compilers by absolute path: their own folder is first on PATH.
  if (!via.cc.is_absolute() || !via.cxx.is_absolute()) return std::nullopt;
  const bool clang = plan.host->compiler.family == compiler::Family::clang;
  auto script = [](const fs::path& real) {
    const std::string exe = strings::shell_quote(real.string());
    return "#!/bin/sh\n"
           "# Written by opforge: " +
           real.string() +
           " without debug information when it compiles.\n"
           "# opforge strips the wheel's libraries, so what -g adds is thrown away; -g0 comes last\n"
           "# to override any -g, and the generated code is the same either way.\n"
           "for a do\n"
           "  case $a in -c) exec " +
           exe +
           " \"$@\" -g0 ;; esac\n"
           "done\n"
           "exec " +
           exe + " \"$@\"\n";
  };
  HostWrappers w;
  std::string key;
  for (const auto& [name, real] : std::vector<std::pair<std::string, fs::path>>{
           {clang ? "clang" : "gcc", via.cc}, {clang ? "clang++" : "g++", via.cxx}, {"cc", via.cc}, {"c++", via.cxx}}) {
    w.files.emplace_back(name, script(real));
    key += name + "\n" + w.files.back().second + compiler::stamp(fs, real) + "\n";
  }
  w.dir = cache_dir / "host" / sha256_hex(key).substr(0, 16);
  w.cc = w.dir / (clang ? "cc" : "gcc");
  w.cxx = w.dir / (clang ? "c++" : "g++");
  return w;
}

Status write_host_wrappers(probe::FileSystem& fs, const HostWrappers& w) {
  for (const auto& [name, text] : w.files) OPFORGE_CHECK(compiler::write_script(fs, w.dir / name, text));
  return {};
}

Status write_nvcc_wrapper(probe::FileSystem& fs, const NvccWrapper& w) {
  return compiler::write_script(fs, w.path, w.text);
}

std::optional<NvccWrapper> default_nvcc_wrapper(probe::Machine m, const plan::Plan& plan) {
  const fs::path cache_dir = settings::cache_dir(m.env);
  if (!plan.cuda.chosen || cache_dir.empty()) return std::nullopt;
  return nvcc_wrapper(cache_dir, plan.cuda.chosen->nvcc, compiler::stamp(m.fs, plan.cuda.chosen->nvcc));
}

std::optional<HostWrappers> default_host_wrappers(probe::Machine m, const plan::Plan& plan) {
  return host_wrappers(m.fs, settings::cache_dir(m.env), plan);
}

}  // namespace opforge::compile
