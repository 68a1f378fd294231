// The op.toml reader: TOML, the string checks (no control characters), source containment.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ops/ops.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto manifest = opforge::ops::parse_manifest("/fuzz/src/kernels/op/op.toml", text, "/fuzz");
  if (!manifest) (void)manifest.error().render();
  return 0;
}
