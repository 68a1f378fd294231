// The recipe parser (TOML guard + TOML++ + validation) and the grammars it applies to values.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "recipe/recipe.h"
#include "util/version.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto recipe = opforge::recipe::parse_file("/fuzz/recipe.toml", text);
  if (!recipe) (void)recipe.error().render();
  auto spec = opforge::parse_version_spec(text.substr(0, 256));
  if (!spec) (void)spec.error().render();
  (void)opforge::recipe::check_arch_list(text.substr(0, 256));
  return 0;
}
