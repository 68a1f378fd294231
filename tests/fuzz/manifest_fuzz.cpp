// The op.toml reader: TOML, the string checks (no control characters), source containment, the
// `[machine.<platform>]` tables and for_platform's merge of each (applying it twice changes
// nothing).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ops/ops.h"
#include "target/platform.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace opforge;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto manifest = ops::parse_manifest("/fuzz/src/kernels/op/op.toml", text, "/fuzz");
  if (!manifest) {
    (void)manifest.error().render();
    return 0;
  }
  for (const auto& platform : target::platforms()) {
    const auto once = ops::for_platform(*manifest, platform.name);
    const auto twice = ops::for_platform(once, platform.name);
    if (twice.sources != once.sources || twice.source_flags != once.source_flags || !twice.machines.empty())
      __builtin_trap();
  }
  return 0;
}
