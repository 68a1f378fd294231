#pragma once
/// The machines a wheel's code can be built for: one row each in platforms(). A cross-build, the
/// wheel's platform tag, the ELF check and the node check all ask this table, so a new machine is
/// a row here, not a set of if-branches. Pure data, below recipe/, compiler/, cuda/ and wheel/.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace opforge::target {

struct Platform {
  /// As `uname -m`, wheel platform tags and the recipe spell it: "x86_64", "aarch64".
  std::string_view name;
  /// Other spellings users write (Debian's "amd64"/"arm64", "x86-64").
  std::string_view aliases[2];
  std::uint16_t elf_machine;   ///< e_machine of its ELF files: EM_X86_64 (62), EM_AARCH64 (183)
  std::string_view code_name;  ///< how people name its code: "x86-64", "AArch64"
  /// Debian's multiarch triple, which is also its cross compilers' prefix ("aarch64-linux-gnu-g++").
  std::string_view triple;
  std::string_view debian_arch;  ///< "amd64", "arm64" (debootstrap --arch, dpkg)
  /// Debian's package of the cross g++ that targets it from another machine.
  std::string_view cross_gxx_package;
  /// The folder under a toolkit's targets/ that nvcc reads when its host compiler targets this
  /// machine (nvcc -dryrun: _TARGET_DIR_=targets/aarch64-linux with an aarch64 -ccbin).
  std::string_view nvcc_target_dir;
  /// NVIDIA's PyPI wheels for it carry this platform tag (pip download --platform).
  std::string_view pypi_platform;
  /// The oldest glibc a manylinux tag names for it: 2.5 (manylinux1) on x86_64, 2.17
  /// (manylinux2014) on aarch64, which had none before.
  int manylinux_floor_minor;
  std::string_view qemu;  ///< Debian's qemu-user-static emulator of it ("qemu-aarch64-static")
};

/// Every platform opforge builds for, host first on no machine in particular (table order).
std::span<const Platform> platforms();

/// The platform `name` or one of its aliases names; nullptr for any other text.
const Platform* find_platform(std::string_view name);

/// The platform whose ELF machine is `e_machine`; nullptr for one opforge does not build for.
const Platform* platform_of_elf(std::uint16_t e_machine);

/// The platform this opforge was compiled for: the machine it runs on.
const Platform& host_platform();

/// "\"x86_64\", \"aarch64\"" for messages that list the known ones.
std::string platform_names();

}  // namespace opforge::target
