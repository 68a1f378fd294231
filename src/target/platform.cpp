/// The platform table (target/platform.h). Facts: ELF e_machine values from elf.h; Debian's
/// multiarch triples and cross-compiler packages (g++-aarch64-linux-gnu, g++-x86-64-linux-gnu);
/// nvcc 13.0 picks targets/aarch64-linux for an aarch64 host compiler (nvcc -dryrun); NVIDIA's
/// nvidia-cuda-runtime wheels are tagged manylinux2014_{x86_64,aarch64} (glibc 2.17, PEP 599).
#include "target/platform.h"

namespace opforge::target {
namespace {

constexpr Platform kPlatforms[] = {
    {"x86_64",
     {"amd64", "x86-64"},
     62,
     "x86-64",
     "x86_64-linux-gnu",
     "amd64",
     "g++-x86-64-linux-gnu",
     "x86_64-linux",
     "manylinux2014_x86_64",
     5,
     "qemu-x86_64-static"},
    {"aarch64",
     {"arm64", ""},
     183,
     "AArch64",
     "aarch64-linux-gnu",
     "arm64",
     "g++-aarch64-linux-gnu",
     "aarch64-linux",
     "manylinux2014_aarch64",
     17,
     "qemu-aarch64-static"},
};

}  // namespace

std::span<const Platform> platforms() { return kPlatforms; }

const Platform* find_platform(std::string_view name) {
  if (name.empty()) return nullptr;
  for (const auto& p : kPlatforms) {
    if (p.name == name) return &p;
    for (auto alias : p.aliases)
      if (!alias.empty() && alias == name) return &p;
  }
  return nullptr;
}

const Platform* platform_of_elf(std::uint16_t e_machine) {
  for (const auto& p : kPlatforms)
    if (p.elf_machine == e_machine) return &p;
  return nullptr;
}

const Platform& host_platform() {
#if defined(__aarch64__)
  return kPlatforms[1];
#else
  return kPlatforms[0];
#endif
}

std::string platform_names() {
  std::string out;
  for (const auto& p : kPlatforms) {
    if (!out.empty()) out += ", ";
    out += "\"" + std::string(p.name) + "\"";
  }
  return out;
}

}  // namespace opforge::target
