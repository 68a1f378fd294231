#pragma once
/// torch's CUDA against a toolkit's, as PyTorch's extension builder judges it: a different major is
/// an error (torch refuses to build extensions, whatever DeepSpeed's DS_SKIP_CUDA_CHECK says), a
/// different minor a warning. DeepSpeed is stricter (exact major.minor, or a same-major list that
/// has no 13.x entries): a plan of a DeepSpeed tree says so and exports DS_SKIP_CUDA_CHECK=1
/// (plan/toolchain.cpp); these words are every project's.
#include <optional>
#include <string>

#include "cuda/toolkit.h"

namespace opforge::cuda {

enum class Mismatch { none, minor, major };

/// The rule: how a toolkit's CUDA `have` differs from torch's `want`.
constexpr Mismatch compare_cuda(const Version& have, const Version& want) {
  if (have.major != want.major) return Mismatch::major;
  if (have.minor != want.minor) return Mismatch::minor;
  return Mismatch::none;
}

struct TorchMatch {
  Mismatch mismatch = Mismatch::none;
  std::string message;  ///< names both versions; empty when none
};

inline TorchMatch torch_match(const TorchInfo& torch, const Toolkit& tk) {
  TorchMatch out;
  if (!torch.cuda) return out;
  const Version& tc = *torch.cuda;
  out.mismatch = compare_cuda(tk.version, tc);
  if (out.mismatch == Mismatch::major) {
    out.message = "CUDA " + tk.version.str() + " at " + tk.root.string() + " and torch's CUDA " + tc.str() + " (" +
                  torch.python + ") differ in the major version: torch cannot build extensions with it";
  } else if (out.mismatch == Mismatch::minor) {
    out.message = "CUDA " + tk.version.str() + " differs from torch's CUDA " + tc.str() +
                  " in the minor version: accepted (PyTorch only warns)";
  }
  return out;
}

}  // namespace opforge::cuda
