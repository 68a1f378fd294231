// The ELF readers: any bytes as one library of a wheel. read_elf (the dynamic section, the symbol
// versions, the undefined symbols torch_linkage reads to pin a wheel to its torch, the
// fatbinary) and read_isa (every executable section decoded, x86-64 with Zydis, AArch64 by
// wheel/isa_aarch64.cpp) must return an answer or an error, never crash or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "wheel/isa.h"
#include "wheel/wheel.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace opforge;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto elf = wheel::read_elf(bytes)) {
    auto linkage = wheel::torch_linkage(*elf);
    (void)wheel::torch_abi_name(linkage.abi);
  } else {
    (void)elf.error().render();
  }
  if (auto use = wheel::read_isa(bytes)) {
    (void)use->summary();
    (void)use->level_name();
    for (const auto& f : use->families) (void)wheel::describe_use(f);
  } else {
    (void)use.error().render();
  }
  return 0;
}
