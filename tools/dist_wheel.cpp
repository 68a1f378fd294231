// opforge_dist_wheel PREFIX VERSION DIST: packs an installed opforge (PREFIX/bin/opforge and
// PREFIX/share/opforge, as `cmake --install` lays them out) into opforge's own platform wheel with
// the deterministic writer of wheel/. scripts/dist runs it; it is no part of the opforge command.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string_view>

#include "probe/machine.h"
#include "target/platform.h"
#include "util/numbers.h"
#include "wheel/wheel.h"

namespace {

constexpr const char* kDescription = R"(# opforge

Prebuilds DeepSpeed-style CUDA/C++ ops into bit-for-bit reproducible binary wheels.

    pip install opforge-*.whl
    opforge doctor
    opforge build default

The `opforge` command is one static executable (glibc 2.28 or newer, no libstdc++ needed); its
recipes, bundled ops and Python package are installed beside it in `share/opforge`.
)";

/// The tags of a wheel holding `binary` when it is another machine's executable than x86-64 (an
/// aarch64 one, cross-built): the writer's platform tag names the policy the glibc needs fit
/// ("manylinux_2_26" for GLIBC_2.25, as auditwheel names it) but spells every machine as x86_64, so
/// the policy is kept (never below the machine's manylinux floor) and the machine is the ELF's own.
/// Empty (the writer decides) for x86-64 and whenever the writer already names the machine.
opforge::Result<std::vector<std::string>> foreign_tags(const std::string& binary) {
  using namespace opforge;
  if (binary.size() < 20) return bad_input("bin/opforge is not an ELF executable");
  const auto machine =
      static_cast<std::uint16_t>(static_cast<unsigned char>(binary[18]) | static_cast<unsigned char>(binary[19]) << 8);
  const auto* platform = target::platform_of_elf(machine);
  if (!platform)
    return bad_input("bin/opforge is for ELF machine " + std::to_string(machine) + ", none of " +
                     target::platform_names());
  const std::string suffix = "_" + std::string(platform->name);
  auto elf = OPFORGE_TRY(wheel::read_elf(binary));
  auto decided = wheel::platform_tag({{"opforge", elf}});
  if (decided.platform.ends_with(suffix)) return std::vector<std::string>{};
  constexpr std::string_view prefix = "manylinux_2_", x86 = "_x86_64";
  std::optional<int> minor;
  if (decided.reasons.empty() && decided.platform.starts_with(prefix) && decided.platform.ends_with(x86)) {
    const auto digits = std::string_view(decided.platform).substr(prefix.size());
    if (auto v = numbers::parse_int<int>(digits.substr(0, digits.size() - x86.size()))) minor = *v;
  }
  if (!minor)
    return bad_input("bin/opforge is no manylinux executable (" + decided.platform + ")" +
                     (decided.reasons.empty() ? std::string() : ": " + decided.reasons.front()));
  return std::vector<std::string>{"py3-none-manylinux_2_" +
                                  std::to_string(std::max(*minor, platform->manylinux_floor_minor)) + suffix};
}

opforge::Status run(const std::filesystem::path& prefix, const std::string& version,
                    const std::filesystem::path& dist) {
  using namespace opforge;
  auto m = probe::real_machine();
  const std::string data = "opforge-" + version + ".data";
  wheel::Spec spec;
  spec.name = "opforge";
  spec.version = version;
  spec.summary = "Prebuild CUDA/C++ ops into reproducible binary wheels";
  spec.description = kDescription;
  spec.requires_python = ">=3.8";
  // pip installs .data/scripts/ into the environment's bin/ as it is (no Python start-up in
  // front of it) and .data/data/ under the environment's prefix, so share/opforge lands beside bin/.
  auto binary = OPFORGE_TRY(m.fs.read_file(prefix / "bin/opforge"));
  spec.tags = OPFORGE_TRY(foreign_tags(binary));
  spec.files.push_back({data + "/scripts/opforge", std::move(binary), 0755});
  auto shared = OPFORGE_TRY(wheel::collect_files(m.fs, prefix / "share/opforge", data + "/data/share/opforge"));
  for (auto& f : shared) spec.files.push_back(std::move(f));
  auto written = OPFORGE_TRY(wheel::write(m.fs, spec, dist));
  std::cout << written.path.string() << "\n";
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: opforge_dist_wheel PREFIX VERSION DIST\n";
    return 2;
  }
  auto status = run(argv[1], argv[2], argv[3]);
  if (!status) {
    std::cerr << "opforge_dist_wheel: error: " << status.error().render() << "\n";
    return opforge::exit_code(status.error().kind);
  }
  return 0;
}
