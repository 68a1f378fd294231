#pragma once
/// CUDA toolkit discovery and choice (docs/reference.md §4).
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/toolkit.h"
#include "probe/machine.h"
#include "util/error.h"

namespace opforge::cuda {

/// Pure parsers over captured real texts; nullopt when the text says nothing usable.
std::optional<Version> parse_version_json(std::string_view text);  ///< "cuda": {"version": ...}
std::optional<Version> parse_version_txt(std::string_view text);   ///< CUDA Version 10.2.89
std::optional<Version> parse_nvcc_version(std::string_view text);  ///< release 13.0, V13.0.88
std::optional<Version> parse_cuda_h(std::string_view text);        ///< #define CUDA_VERSION 13000
/// torch/version.py: `__version__` and `cuda` (None for CPU builds).
struct TorchVersionPy {
  std::optional<std::string> version;
  std::optional<Version> cuda;
};
TorchVersionPy parse_torch_version_py(std::string_view text);
/// A wrapper script's `exec /path/to/nvcc "$@"`: the first line (after white space) that execs a
/// path ending in /nvcc, quoted or not.
std::optional<fs::path> parse_nvcc_wrapper(std::string_view script);

/// What one run of the project's Python says: where `import torch` would load torch from
/// (importlib.util.find_spec, which imports nothing), sys.path, sysconfig's CFLAGS.
struct PythonProbe {
  bool ok = false;                        ///< the output was readable
  std::string torch_origin;               ///< .../torch/__init__.py; empty: not found
  std::vector<fs::path> torch_locations;  ///< the package's folders
  std::vector<std::string> sys_path;
  std::string cflags;
};
PythonProbe parse_python_probe(std::string_view json);

/// Reads torch's version and CUDA from torch/version.py where `python` would import torch from
/// (PYTHONPATH, .pth files and editable installs included) without importing it: one python call.
/// nullopt when the python cannot be run; torch_version nullopt when torch is not installed.
std::optional<TorchInfo> read_torch(probe::Machine m, const std::string& python);

/// Every candidate (docs/reference.md §4 search order, wrapper scripts followed, pip-wheel toolkits under
/// site-packages/nvidia), validated (bin/nvcc, cuda.h, libcudart*), with versions
/// (version.json > version.txt > nvcc --version > cuda.h); nothing chosen.
Resolution discover(probe::Machine m, const std::optional<TorchInfo>& torch);

/// Chooses among `discovered` per spec (marks candidates, fills verdicts and warnings).
/// The pure half of resolve().
Result<Resolution> choose(Resolution discovered, const std::string& version_spec, const probe::Environment& env);

/// discover + choose per spec: "auto" (newest valid, preferring torch's major.minor), "torch",
/// "X.Y", ranges ">=12.1,<13". bad_input for a malformed spec; unsatisfied (exit 3) when nothing
/// matches — the message lists every candidate and why. CUDA_HOME (else CUDA_PATH) from m.env,
/// when set, is the toolkit used: bad_input when it is not a toolkit (the message says what is
/// missing), unsatisfied when its version does not match the spec or torch's CUDA major.
/// DS_SKIP_CUDA_CHECK=1 turns the torch major mismatch into a warning.
Result<Resolution> resolve(probe::Machine m, const std::string& version_spec, const std::string& python);

/// True for the errors about the toolkit CUDA_HOME/CUDA_PATH names (choose(): bad_input when it
/// is not a toolkit, unsatisfied when it conflicts with the spec): the user asked for that
/// toolkit, so a plan fails on them even when no CUDA op is requested.
bool names_user_toolkit(const Error& e);

/// CUDA_HOME, PATH (toolkit bin prepended to the current PATH), LD_LIBRARY_PATH (lib dir prepended).
std::map<std::string, std::string> exports(const Toolkit& tk, const probe::Environment& env);

}  // namespace opforge::cuda
