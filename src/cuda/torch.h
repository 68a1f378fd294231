#pragma once
/// torch's version and CUDA, read from torch/version.py where a Python would import torch from,
/// without importing it.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cuda/toolkit.h"
#include "probe/machine.h"

namespace opforge::cuda {

/// torch/version.py: `__version__` and `cuda` (None for CPU builds).
struct TorchVersionPy {
  std::optional<std::string> version;
  std::optional<Version> cuda;
};
TorchVersionPy parse_torch_version_py(std::string_view text);

/// What one run of the project's Python says: where `import torch` would load torch from
/// (importlib.util.find_spec, which imports nothing), sys.path, sysconfig's CFLAGS.
struct PythonProbe {
  bool ok = false;                        ///< the output was readable
  std::string torch_origin;               ///< .../torch/__init__.py; empty: not found
  std::vector<fs::path> torch_locations;  ///< the package's folders
  std::vector<std::string> sys_path;
  std::string cflags;
  std::optional<std::pair<int, int>> version;  ///< (3, 11)
  std::string include;                         ///< sysconfig's include folder (Python.h, with python3-dev)
  /// sysconfig's stdlib folder, where a cross-build finds the target's _sysconfigdata module
  std::string stdlib;
};
PythonProbe parse_python_probe(std::string_view json);

/// The probe's answer for `python`, remembered as read_torch's is (one Python start while nothing
/// it depends on changed); nullopt when it cannot be run.
std::optional<PythonProbe> read_python(probe::Machine m, const std::string& python);

/// Reads torch's version and CUDA from torch/version.py where `python` would import torch from
/// (PYTHONPATH, .pth files and editable installs included) without importing it: one python call,
/// whose answer is remembered in <cache>/python.json (probe::default_cache_dir) keyed by the
/// interpreter (as named, its real path and stamp), the Python variables and the working folder,
/// and used again only while every folder on its sys.path (and pyenv's version files) keeps its
/// stamp: installing or removing a package changes the folder it lands in.
/// nullopt when the python cannot be run; torch_version nullopt when torch is not installed.
std::optional<TorchInfo> read_torch(probe::Machine m, const std::string& python);

}  // namespace opforge::cuda
