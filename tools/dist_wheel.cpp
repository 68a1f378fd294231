// opforge_dist_wheel PREFIX VERSION DIST: packs an installed opforge (PREFIX/bin/opforge and
// PREFIX/share/opforge, as `cmake --install` lays them out) into opforge's own platform wheel with
// the deterministic writer of wheel/. scripts/dist runs it; it is no part of the opforge command.
#include <iostream>

#include "probe/machine.h"
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
