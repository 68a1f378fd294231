#pragma once
/// GPU architectures in TORCH_CUDA_ARCH_LIST syntax (docs/reference.md §3): pure data and its
/// parser, below every stage that reads an arch list (recipe/, devices/).
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace opforge::target {

struct Arch {
  int major = 0;
  int minor = 0;
  char suffix = 0;   ///< 0, 'a' (arch-specific) or 'f' (family)
  bool ptx = false;  ///< +PTX: also embed compute_XY PTX
  auto operator<=>(const Arch&) const = default;
  std::string str() const;  ///< "9.0a+PTX"
  std::string sm() const;   ///< "90a"
  /// nvcc flags: -gencode=arch=compute_90a,code=sm_90a (and code=compute_90a for +PTX)
  std::vector<std::string> gencode() const;
};

/// TORCH_CUDA_ARCH_LIST syntax exactly as PyTorch (';' or ' ' separators, X.Y, 'a' suffix, +PTX,
/// named arches of docs/reference.md §3). bad_input with Error::where.column = 1-based column of the
/// offending entry inside `text` (the recipe parser adds file/line).
Result<std::vector<Arch>> parse_arch_list(std::string_view text);

/// parse_arch_list, refusing also an empty entry ("8.6;;"), which PyTorch splits on ';' and
/// rejects whatever the parser tolerates: the one check of every arch list opforge reads
/// (TORCH_CUDA_ARCH_LIST, [arch] list and fallback).
Result<std::vector<Arch>> check_arch_list(std::string_view text);

/// The list in the spelling parse_arch_list reads and TORCH_CUDA_ARCH_LIST takes: "8.0;9.0a+PTX".
std::string arch_list_str(const std::vector<Arch>& arches);

/// The list in CMake's CMAKE_CUDA_ARCHITECTURES (and CUDAARCHS) spelling, so a CMake project
/// compiles exactly what TORCH_CUDA_ARCH_LIST asks of torch: each entry's GPU code as
/// "<sm>-real" (SASS only; CMake's bare "90" would add PTX to every entry), and "+PTX" as one more
/// "<sm>-virtual". "8.0;8.6;9.0+PTX" → "80-real;86-real;90-real;90-virtual", "9.0a" → "90a-real".
std::string cmake_architectures(const std::vector<Arch>& arches);

/// One spelling of an arch list that a project's own variable takes (recipe [arch] env and
/// cmake_define; docs/external-projects.md lists the projects): an axis, one row a form.
struct ArchForm {
  std::string_view name;     ///< the recipe's word: "torch", "cmake", "numbers", "dotted"
  std::string_view example;  ///< "8.0;9.0a" spelt this way, for docs and errors
  std::string_view readers;  ///< who reads this spelling, for docs and `plan`
  std::string (*spell)(const std::vector<Arch>&);
};

/// Every form, in the order docs list them.
std::span<const ArchForm> arch_forms();
/// The form called `name`; nullptr when there is none.
const ArchForm* find_arch_form(std::string_view name);
/// "torch, cmake, numbers, dotted": the names as a line for messages.
std::string arch_form_names();

}  // namespace opforge::target
