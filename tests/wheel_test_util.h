#pragma once
// Test helpers for the wheel tests: real gcc/nvcc builds of tiny shared libraries into a temp dir.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>

#include "target/cpu.h"
#include "test_util.h"

namespace opforge::wheel::testing {

using test_util::slurp;
using test_util::spit;
using test_util::temp_dir;

/// Compiles `source` (C) into a shared library with gcc and returns its bytes ("" on failure).
inline std::string build_so(const std::string& tag, const std::string& source, const std::string& extra_flags = "") {
  auto dir = temp_dir(tag);
  spit(dir / "lib.c", source);
  std::string cmd = "gcc -shared -fPIC -O2 " + extra_flags + " -o " + (dir / "lib.so").string() + " " +
                    (dir / "lib.c").string() + " 2>&1";
  if (std::system(cmd.c_str()) != 0) return "";
  return slurp(dir / "lib.so");
}

/// Compiles a one-kernel CUDA library with the real nvcc (sm_80 SASS, sm_90 SASS + PTX) into
/// dir/k.so; false when nvcc fails.
/// dir/k.so: one kernel for sm_80, sm_90 and compute_90, or for `gencode` when given.
inline bool build_nvcc_library(const std::string& nvcc, const std::filesystem::path& dir,
                               const std::string& gencode =
                                   "-gencode arch=compute_80,code=sm_80"
                                   " -gencode arch=compute_90,code=[sm_90,compute_90]") {
  spit(dir / "k.cu",
       "__global__ void k(float* x) { x[threadIdx.x] *= 2.f; }\n"
       "extern \"C\" int opforge_k_run(float* x) { k<<<1, 32>>>(x); return 0; }\n");
  std::string cmd = nvcc + " -shared -Xcompiler=-fPIC " + gencode + " -o " + (dir / "k.so").string() + " " +
                    (dir / "k.cu").string() + " 2>&1";
  return std::system(cmd.c_str()) == 0;
}

/// What `cmd` prints on stdout ("" when it cannot start).
inline std::string command_output(const std::string& cmd) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return out;
  char buf[4096];
  while (auto n = std::fread(buf, 1, sizeof buf, pipe.get())) out.append(buf, n);
  return out;
}

/// The ISA families of `machine` whose gcc macro `<gcc> <flags> -dM -E` defines.
inline std::set<std::string> gcc_families(const std::string& gcc, const std::string& machine,
                                          const std::string& flags) {
  auto macros = command_output(gcc + " " + flags + " -dM -E -x c /dev/null 2>/dev/null");
  std::set<std::string> out;
  for (const auto& f : target::isa_families(machine))
    if (macros.find("#define " + std::string(f.gcc_macro) + " ") != std::string::npos) out.emplace(f.name);
  return out;
}

}  // namespace opforge::wheel::testing
