// libFuzzer harness for the wheel reader: any bytes as the content of a .whl, through the paths of
// `opforge verify WHEEL` (verify_bytes) and `opforge inspect WHEEL` (inspect_bytes: the archive,
// RECORD, METADATA, WHEEL and every ELF file's dynamic section and fatbinary). Both must return a
// report or an error within wheel::Limits, never crash, hang or inflate without bound.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "wheel/wheel.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)opforge::wheel::verify_bytes("w-1.0-py3-none-any.whl", bytes);
  (void)opforge::wheel::inspect_bytes("w-1.0-py3-none-any.whl", bytes);
  return 0;
}
