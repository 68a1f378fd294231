#pragma once
/// What goes in front of each compile the wrappers run when the compiler cache is sccache: a
/// launcher script that keeps the build machine's environment here. The compiler cache's business,
/// not the wrappers' (compile/wrap/ uses it; compile/compiler_cache/sccache.cpp's test compile does too).
#include <filesystem>
#include <string>

#include "plan/plan.h"
#include "probe/machine.h"
#include "util/error.h"

namespace opforge::compile {

/// A compile's launcher (sccache) behind a script that runs it with only the variables a compile
/// needs: the names of settings::compile_variables (the table's Reach::compile rows), and
/// SCCACHE_CONF=/dev/null (a compile's sccache only talks to its server, which has the
/// configuration). sccache sends a compile's whole environment with it to a build server, whose
/// sandbox command line (`bwrap --setenv NAME VALUE ...`) anyone on that server can read: the
/// build machine's other variables (HOME, CI settings, cloud credentials) stay here.
struct CompileLauncher {
  std::filesystem::path path;  ///< <cache_dir>/launch/<16 hex of the text's sha256>/<program's name>
  std::string text;            ///< the script
};
CompileLauncher compile_launcher(const std::filesystem::path& cache_dir, const std::string& program);
/// Writes it unless the same text is there already.
Status write_compile_launcher(probe::FileSystem& fs, const CompileLauncher& l);

/// The compiler cache's program that goes in front of each compile the wrappers run: "sccache"
/// for cache = "sccache", nothing otherwise (ccache goes in front of PYTORCH_NVCC, where torch
/// looks for it).
std::string wrapper_launcher(const plan::Plan& plan);
/// What the wrappers put in front of each compile: compile_launcher's path for wrapper_launcher's
/// program (empty: none, or no cache folder).
std::string wrapper_launch(const plan::Plan& plan, const std::filesystem::path& cache_dir);

}  // namespace opforge::compile
