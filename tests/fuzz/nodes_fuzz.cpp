// The node reports `verify --nodes` and `pick --nodes` read: a `doctor --json` report or a node
// check's report (schema opforge-nodecheck/1), any bytes. parse_node_reports never fails (what
// cannot be read is unknown, with why), and every check then runs on what it read.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rollout/rollout.h"

namespace {

/// Two wheels to check each node against: an x86-64 CUDA wheel pinned to one torch and an aarch64
/// one on the stable ABI, so that every check has something to compare.
std::vector<opforge::rollout::WheelNeeds> wheels() {
  using namespace opforge;
  rollout::WheelNeeds x86;
  x86.filename = "ops-1.0-cp311-cp311-manylinux_2_34_x86_64.whl";
  x86.python_tags = {"cp311"};
  x86.abi_tags = {"cp311"};
  x86.platforms = {"manylinux_2_34_x86_64"};
  x86.system.glibc_minor = 34;
  x86.system.glibcxx = "3.4.30";
  x86.system.cxxabi = "1.3.13";
  x86.cpu_level = 3;
  x86.torch = "==2.15.*";
  x86.cuda = "13.0";
  wheel::FatbinImage sm90{wheel::FatbinImage::Kind::elf, 90, 'a', false, 1, {0, 0}};
  wheel::FatbinImage ptx{wheel::FatbinImage::Kind::ptx, 120, 0, false, 1, {9, 0}};
  x86.gpu_libraries = {{"ops/_C.so", {sm90, ptx}}};
  rollout::WheelNeeds arm;
  arm.filename = "ops-1.0-cp39-abi3-manylinux_2_28_aarch64.whl";
  arm.python_tags = {"cp39"};
  arm.abi_tags = {"abi3"};
  arm.platforms = {"manylinux_2_28_aarch64"};
  arm.torch = ">=2.12";
  arm.cuda = "13";
  return {x86, arm};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace opforge;
  static const auto kWheels = wheels();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto& node : rollout::parse_node_reports("/fuzz/node.json", text)) {
    (void)rollout::node_driver_cuda(node);
    for (const auto& w : kWheels) (void)rollout::check_node(w, node);
  }
  return 0;
}
