#include "compiler/cpu_target.h"

#include <set>

#include "compiler/resolve.h"
#include "util/hash.h"
#include "util/strings.h"

namespace opforge::compiler {

std::string simd_macro_for(std::string_view macro, const target::CpuTarget& target) {
  const bool avx512 = target.allows("AVX-512F");
  const bool avx256 = target.allows("AVX2") && target.allows("FMA") && target.allows("F16C");
  if (macro == "__AVX512__" && !avx512) return avx256 ? "__AVX256__" : "__SCALAR__";
  if (macro == "__AVX256__" && !avx256) return "__SCALAR__";
  return std::string(macro);
}

std::string wrapper_script(const fs::path& real, const target::CpuTarget& target) {
  // gcc accepts no psABI level or architecture as -mtune: a level keeps the generic tuning.
  const std::string tune = target.tune.empty() ? "generic" : target.tune;
  const std::string arch = target.arch.empty() ? target.name : target.arch;
  const target::CpuMachine* machine = target::cpu_machine(target.platform);
  std::string s;
  s += "#!/bin/sh\n";
  s += "# Written by opforge (recipe [build] cpu_target = \"" + target.name + "\"): runs " + real.string() + "\n";
  s += "# for CPU target " + target.name + " whatever -march=native the build asks for.\n";
  s += "n=$#\n";
  s += "while [ \"$n\" -gt 0 ]; do\n";
  s += "  a=$1\n";
  s += "  shift\n";
  s += "  n=$((n - 1))\n";
  s += "  case $a in\n";
  s += "    -march=native) a=-march=" + arch + " ;;\n";
  if (machine && machine->mcpu_sets_arch) {
    // AArch64's -mcpu=native is -march=native -mtune=native: both pinned, in two arguments.
    s += "    -mtune=native) a=-mtune=" + tune + " ;;\n";
    s += "    -mcpu=native) set -- \"$@\" -march=" + arch + "; a=-mtune=" + tune + " ;;\n";
  } else {
    s += "    -mtune=native|-mcpu=native) a=-mtune=" + tune + " ;;\n";
  }
  for (std::string macro : {"__AVX512__", "__AVX256__"}) {
    std::string to = simd_macro_for(macro, target);
    if (to != macro) s += "    -D" + macro + ") a=-D" + to + " ;;\n";
  }
  s += "  esac\n";
  s += "  set -- \"$@\" \"$a\"\n";
  s += "done\n";
  s += "exec " + strings::shell_quote(real.string()) + " \"$@\"\n";
  return s;
}

fs::path wrapper_dir(const probe::FileSystem& fs, const fs::path& root, const Compiler& compiler,
                     const target::CpuTarget& target) {
  std::string key = target.name;
  for (const auto& p : {compiler.cc, compiler.cxx}) {
    key += "\n" + p.string();
    if (auto s = stamp(fs, p); !s.empty()) key += " " + s;
  }
  return root / "cpu-shim" / (target.name + "-" + sha256_hex(key).substr(0, 16));
}

Status write_wrappers(probe::FileSystem& fs, const fs::path& dir, const Compiler& compiler,
                      const target::CpuTarget& target) {
  std::vector<std::pair<std::string, fs::path>> names = {
      {"gcc", compiler.cc}, {"g++", compiler.cxx}, {"cc", compiler.cc}, {"c++", compiler.cxx}};
  if (compiler.family == Family::clang)
    names = {{"clang", compiler.cc}, {"clang++", compiler.cxx}, {"cc", compiler.cc}, {"c++", compiler.cxx}};
  names.emplace_back(compiler.cc.filename().string(), compiler.cc);
  names.emplace_back(compiler.cxx.filename().string(), compiler.cxx);
  std::set<std::string> done;
  for (const auto& [name, real] : names) {
    if (name.empty() || !done.insert(name).second) continue;
    // The real compiler by its absolute path: the shim folder is first on PATH for command
    // builds, so a bare name would find the wrapper itself.
    fs::path target_path = real.is_absolute() ? real : fs.canonical(real).value_or(real);
    OPFORGE_CHECK(write_script(fs, dir / name, wrapper_script(target_path, target)));
  }
  return {};
}

Result<HostChoice> host_without_toolkit(probe::Machine m, const std::string& host) {
  HostChoice choice;
  choice.installed = find_installed(m);
  // find_installed lists the default compiler first.
  for (const auto& c : choice.installed) {
    bool named =
        c.cxx == fs::path(host) || c.cc == fs::path(host) || c.cxx.filename() == host || c.cc.filename() == host;
    if (host == "auto" || named) {
      choice.compiler = c;
      choice.reason = host == "auto" ? "the default compiler (no CUDA toolkit to satisfy)" : "[compiler] host";
      return choice;
    }
  }
  return unsatisfied(
      "no host compiler " + (host == "auto" ? std::string("(gcc or clang) on PATH") : "'" + host + "' on PATH"),
      host == "auto" ? "install g++ (apt-get install g++, dnf install gcc-c++) or set [compiler] host"
                     : "install " + host + " (apt-get install " + host +
                           "), or set [compiler] host to \"auto\" or to an installed compiler");
}

HostChoice pin_cpu_target(HostChoice choice, const fs::path& dir, const std::string& target) {
  choice.shim_dir = dir;
  choice.cpu_target = target;
  return choice;
}

}  // namespace opforge::compiler
