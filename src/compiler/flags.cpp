#include "compiler/flags.h"

namespace opforge::compiler {

const std::vector<FlagFact>& flag_table() {
  // "Tried here": the real nvcc of Debian 12's nvidia-cuda-toolkit (11.8.89), Debian 13's
  // (12.4.131) and NVIDIA's 13.0.88, each given the flag on a one-kernel compile; a refusal
  // reads `nvcc fatal : Unknown option '-frandom-seed=x'`.
  static const std::vector<FlagFact> table = {
      {Tool::nvcc,
       "-frandom-seed",
       {12, 9, 0},
       "a stable seed for nvcc's generated names",
       "NVIDIA's nvcc documentation from CUDA 12.9; tried here: 11.8 and 12.4 refuse it, 13.0 accepts it"},
      {Tool::nvcc,
       "--compress-mode",
       {13, 0, 0},
       "the fatbinary's compression pinned",
       "tried here: 11.8 and 12.4 refuse it, 13.0 accepts it (the oldest tried that accepts it)"},
      {Tool::nvcc,
       "--threads",
       {11, 2, 0},
       "several architectures compiled in parallel by one nvcc",
       "NVIDIA's CUDA 11.2 release notes; tried here: 11.8, 12.4 and 13.0 accept it"},
      {Tool::nvcc,
       "-Xcicc=--orig_src_path_name",
       {11, 8, 0},
       "names in anonymous namespaces and nvcc's _INTERNAL_ prefixes derived from a stable name, not the "
       "source's folder",
       "tried here: 11.8, 12.4 and 13.0 accept it and give the same bytes from two folders (older: untried)"},
      {Tool::nvcc,
       "-Xcudafe=--orig_src_path_name",
       {11, 8, 0},
       "as -Xcicc=--orig_src_path_name, host side",
       "tried here with 11.8, 12.4 and 13.0, as -Xcicc=--orig_src_path_name"},
      {Tool::nvcc,
       "-Xcompiler",
       {1, 0, 0},
       "host compiler flags (-fPIC, -ffile-prefix-map, -frandom-seed)",
       "every nvcc"},
      {Tool::nvcc,
       "-allow-unsupported-compiler",
       {11, 8, 0},
       "[compiler] allow_unsupported = true",
       "the host_config.h of 11.8, 12.4 and 13.0 names it (older: untried)"},
      {Tool::gcc, "-ffile-prefix-map", {8, 0, 0}, "build and source folders out of the objects", "GCC 8 release notes"},
      {Tool::gcc, "-frandom-seed", {3, 0, 0}, "stable names for anonymous namespaces", "every supported gcc"},
      {Tool::clang,
       "-ffile-prefix-map",
       {10, 0, 0},
       "build and source folders out of the objects",
       "LLVM/Clang 10 release notes"},
      {Tool::clang, "-frandom-seed", {3, 0, 0}, "accepted for gcc compatibility", "every supported clang"},
  };
  return table;
}

std::optional<FlagFact> fact(Tool tool, std::string_view flag) {
  for (const auto& f : flag_table())
    if (f.tool == tool && f.flag == flag) return f;
  return std::nullopt;
}

bool accepts(Tool tool, std::string_view flag, const Version& version) {
  auto f = fact(tool, flag);
  return !f || version >= f->since;
}

}  // namespace opforge::compiler
