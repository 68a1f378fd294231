#pragma once
/// Compiler wrappers that pin the CPU target (recipe `[build] cpu_target`): projects that
/// hard-code `-march=native` (DeepSpeed's cpu_arch()) compile for the build machine's CPU, and
/// their wheel crashes with SIGILL on an older CPU of the same cluster. The wrappers exec the real
/// compiler with `-march=native` replaced by the target and the SIMD macros a build derived from
/// the build machine's CPU (DeepSpeed's simd_width(): -D__AVX512__ / -D__AVX256__) lowered to what
/// the target has.
#include <filesystem>
#include <string>

#include "compiler/host.h"
#include "probe/machine.h"
#include "target/x86.h"
#include "util/error.h"

namespace opforge::compiler {

/// The macro that replaces `-D<macro>` for `target`: "__AVX512__" stays only when the target has
/// AVX-512F, "__AVX256__" only with AVX2, FMA and F16C (what DeepSpeed's 256-bit path uses);
/// otherwise the next lower one, down to "__SCALAR__".
std::string simd_macro_for(std::string_view macro, const target::CpuTarget& target);

/// The text of a POSIX sh wrapper that execs `real` with, in its arguments, `-march=native`
/// replaced by `-march=<target's arch>`, `-mtune=native` by `-mtune=<target's tune>` (generic for
/// a level), `-mcpu=native` by the same -mtune on x86 (where -mcpu is a -mtune alias) and by both
/// -march and -mtune on AArch64 (where -mcpu sets both; gcc 12 has no -mcpu=neoverse-v2, so a named
/// CPU's arch is its architecture with extensions), and `-D__AVX512__` / `-D__AVX256__` by
/// simd_macro_for().
/// Pure: the same inputs give the same bytes (no time, no build folder in it).
std::string wrapper_script(const fs::path& real, const target::CpuTarget& target);

/// The folder for `compiler`'s wrappers under `root` (a cache folder): named by a hash of the
/// target, the real compilers' paths and their stamps, so that every build folder shares one set
/// of files whose mtime changes only when the real compiler does (ccache's compiler check).
fs::path wrapper_dir(const probe::FileSystem& fs, const fs::path& root, const Compiler& compiler,
                     const target::CpuTarget& target);

/// Writes gcc, g++, cc, c++ (and the real compilers' own file names, e.g. g++-11) into `dir` as
/// wrappers of `compiler` (executable, each written atomically; a file with the right text already
/// is left alone, mtime included).
Status write_wrappers(probe::FileSystem& fs, const fs::path& dir, const Compiler& compiler,
                      const target::CpuTarget& target);

/// The host compiler when no toolkit chose one (a CPU-only build): the recipe's `[compiler] host`
/// ("auto": the default gcc/g++ on PATH) among the installed ones. unsatisfied when none is found.
Result<HostChoice> host_without_toolkit(probe::Machine m, const std::string& host);

/// `choice` with its shim replaced by the wrappers in `dir` for `target`.
HostChoice pin_cpu_target(HostChoice choice, const fs::path& dir, const std::string& target);

}  // namespace opforge::compiler
