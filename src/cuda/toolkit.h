#pragma once
/// CUDA toolkits: where they are, what version, which one the recipe gets and why.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "probe/machine.h"
#include "util/version.h"

namespace opforge::cuda {

namespace fs = std::filesystem;

struct Toolkit {
  fs::path root;                  ///< e.g. /usr/local/cuda-13.0 (symlinks resolved)
  fs::path nvcc;                  ///< root/bin/nvcc
  Version version;                ///< major.minor
  std::string version_source;     ///< "version.json", "version.txt", "nvcc --version", "cuda.h"
  std::string nvcc_version_text;  ///< full `nvcc --version` output (may be empty if not run)
  fs::path include_dir;           ///< folder holding cuda.h
  fs::path lib_dir;               ///< folder holding libcudart*
};

/// One place looked at, valid or not, and what became of it.
struct Candidate {
  fs::path path;                   ///< as found
  std::string found_by;            ///< "CUDA_HOME", "PATH (nvcc wrapper script)", "/usr/local/cuda-*", ...
  std::optional<Toolkit> toolkit;  ///< nullopt: invalid
  std::string verdict;             ///< "chosen: ..." or why it was rejected / not chosen
  bool chosen = false;
};

/// The CUDA version of the Python's torch, read from torch/version.py without importing torch.
struct TorchInfo {
  std::string python;                        ///< the interpreter asked
  std::optional<std::string> torch_version;  ///< nullopt: torch not installed
  std::optional<Version> cuda;               ///< nullopt: CPU-only build (or no torch)
  fs::path site_packages;                    ///< where torch (and nvidia/* wheels) live
  fs::path torch_dir;                        ///< the torch package folder (holding version.py)
  std::string torch_version_py_sha256;       ///< torch's identity for caches
  std::string python_cflags;                 ///< sysconfig's CFLAGS of that Python (setuptools' default)
};

struct Resolution {
  std::vector<Candidate> candidates;  ///< every place looked at, deduplicated by root
  std::optional<Toolkit> chosen;
  std::optional<TorchInfo> torch;
  std::vector<std::string> warnings;  ///< e.g. minor mismatch with torch
  /// The index in `warnings` of the one saying that the choice differs from torch's CUDA in the
  /// minor version only (plan and doctor say that in torch_match()'s words instead).
  std::optional<std::size_t> minor_mismatch_warning;
};

}  // namespace opforge::cuda
