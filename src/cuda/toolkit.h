#pragma once
/// CUDA toolkits: where they are, what version, which one the recipe gets and why.
#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/machine.h"
#include "util/version.h"

namespace opforge::cuda {

namespace fs = std::filesystem;

/// How a toolkit's files are laid out (docs/recipe.md, "CUDA toolkits"): where nvcc, cuda.h and
/// libcudart are, relative to each other.
enum class Layout {
  nvidia,        ///< NVIDIA's installer or archive: one folder (/usr/local/cuda-X.Y) holds all three
  distribution,  ///< Debian/Ubuntu's nvidia-cuda-toolkit: /usr/bin/nvcc a wrapper script, the real
                 ///< nvcc in /usr/lib/nvidia-cuda-toolkit/bin with an nvcc.profile naming the system
                 ///< library folder, cuda.h in /usr/include, libcudart in /usr/lib/<multiarch>
  conda,         ///< a conda environment: bin/nvcc, targets/x86_64-linux/{include,lib}, conda-meta/
  pypi,          ///< NVIDIA's PyPI wheels in site-packages/nvidia/ (cuda.h in a sibling package)
};

/// "NVIDIA", "distribution package", "conda", "PyPI wheels".
std::string_view layout_name(Layout l);

struct Toolkit {
  fs::path root;       ///< what a build gets as CUDA_HOME, e.g. /usr/local/cuda-13.0 or /usr
  fs::path nvcc;       ///< root/bin/nvcc (may be a wrapper script)
  fs::path real_nvcc;  ///< the nvcc binary that runs: root/bin/nvcc with wrapper scripts followed
  Layout layout = Layout::nvidia;
  Version version;                ///< major.minor
  std::string version_source;     ///< "version.json", "version.txt", "nvcc --version", "cuda.h"
  std::string nvcc_version_text;  ///< full `nvcc --version` output (may be empty if not run)
  fs::path include_dir;           ///< folder holding cuda.h
  fs::path lib_dir;               ///< folder holding libcudart*
};

/// Where discover() looked for a toolkit. The resolver and the plan ask a candidate's origins;
/// Candidate::found_by is only the text shown for them.
enum class Origin {
  cuda_home,         ///< $CUDA_HOME
  cuda_path,         ///< $CUDA_PATH
  nvcc_on_path,      ///< the folder of `which nvcc` (or the one above it)
  usr_local_cuda,    ///< /usr/local/cuda
  usr_local_cuda_n,  ///< /usr/local/cuda-*
  opt_cuda,          ///< /opt/cuda*
  conda_prefix,      ///< $CONDA_PREFIX
  pip_wheel,         ///< an nvidia/* wheel beside torch
};

/// "CUDA_HOME", "CUDA_PATH", "nvcc on PATH", "/usr/local/cuda", "/usr/local/cuda-*", "/opt/cuda*",
/// "CONDA_PREFIX", "pip wheel": how found_by begins for each.
std::string_view origin_name(Origin o);
/// origin_name's inverse ("CUDA_HOME" → cuda_home); nullopt for any other text.
std::optional<Origin> origin_from_name(std::string_view name);

/// What became of a candidate: discover() says valid or rejected, the resolver chooses one valid
/// candidate and says of the others why not.
enum class Verdict { valid, rejected, chosen, not_chosen };

/// "valid" | "rejected" | "chosen" | "not chosen": the one spelling of each verdict.
std::string_view verdict_name(Verdict v);

/// One place looked at, valid or not, and what became of it.
struct Candidate {
  fs::path path;                   ///< as found
  std::vector<Origin> origins;     ///< every way it was reached, in the order found
  std::string found_by;            ///< their text: "CUDA_HOME, nvcc on PATH (wrapper script /usr/bin/nvcc)", ...
  std::optional<Toolkit> toolkit;  ///< nullopt: invalid
  Verdict verdict = Verdict::rejected;
  std::string why;  ///< the reason, without the verdict word: "no executable bin/nvcc"; empty for valid

  /// Whether the resolver chose it (the verdict says so; there is no second flag to disagree).
  bool chosen() const { return verdict == Verdict::chosen; }

  /// The verdict and its reason, as doctor and plan print them: "rejected: no executable bin/nvcc".
  std::string said() const {
    return why.empty() ? std::string(verdict_name(verdict)) : std::string(verdict_name(verdict)) + ": " + why;
  }

  /// Whether `o` is one of the ways it was reached.
  bool found_through(Origin o) const { return std::find(origins.begin(), origins.end(), o) != origins.end(); }
};

/// The CUDA version of the Python's torch, read from torch/version.py without importing torch.
struct TorchInfo {
  std::string python;                                 ///< the interpreter asked
  std::optional<std::pair<int, int>> python_version;  ///< (3, 11); nullopt when it did not say
  std::optional<std::string> torch_version;           ///< nullopt: torch not installed
  std::optional<Version> cuda;                        ///< nullopt: CPU-only build (or no torch)
  fs::path site_packages;                             ///< where torch (and nvidia/* wheels) live
  fs::path torch_dir;                                 ///< the torch package folder (holding version.py)
  std::string torch_version_py_sha256;                ///< torch's identity for caches
  std::string python_cflags;                          ///< sysconfig's CFLAGS of that Python (setuptools' default)
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
