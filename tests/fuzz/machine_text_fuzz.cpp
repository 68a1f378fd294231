// The parsers of text the machine gives opforge: `nvcc --version`, `nvcc --list-gpu-arch`,
// crt/host_config.h, cuda.h, version.json, version.txt, `nvidia-smi --query-gpu` CSV, torch's
// version.py, a wrapper script of nvcc and a node report. Each gets the same input: none may crash, hang or throw.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "compiler/resolve.h"
#include "cuda/resolve.h"
#include "devices/nodes.h"
#include "devices/resolve.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace opforge;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)cuda::parse_nvcc_version(text);
  (void)cuda::parse_version_json(text);
  (void)cuda::parse_version_txt(text);
  (void)cuda::parse_cuda_h(text);
  (void)cuda::parse_torch_version_py(text);
  (void)cuda::parse_nvcc_wrapper(text);
  (void)compiler::parse_host_config(text);
  (void)devices::parse_nvidia_smi(text);
  (void)devices::parse_list_gpu_arch(text);
  auto nodes = devices::parse_node_report("/fuzz/node.json", text);
  if (!nodes) (void)nodes.error().render();
  return 0;
}
