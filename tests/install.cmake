# opforge's platform wheel (scripts/dist) and where it installs: the `dist_wheel` fixture writes it
# into build/install/dist; the glibc floor is read with opforge's own ELF reader and checked
# against auditwheel; a second clone of HEAD gives the same bytes; Debian roots (debootstrap,
# cached outside the repository) install and run it. The toolchain and static libraries are
# cached under ~/.cache/opforge/dist (scripts/dist.d/static-deps.sh).
# COST (rough cold seconds on 2 cores, a fixture's with its longest user's) orders a first run,
# which has no CTestCostData.txt: the long chains start first. PROCESSORS 2: the test's builds
# keep both cores busy (ninja, opforge's jobs), so ctest counts two of its slots for it.
set(OPFORGE_DIST_OUT ${CMAKE_BINARY_DIR}/install/dist)
set(OPFORGE_INSTALL ${CMAKE_CURRENT_SOURCE_DIR}/install)
# From an empty folder: the tests after it read the one wheel of this commit.
add_test(NAME install.dist COMMAND bash -c "rm -rf \"$1\" && \"$0\" \"$1\"" ${CMAKE_SOURCE_DIR}/scripts/dist
                                   ${OPFORGE_DIST_OUT})
set_tests_properties(install.dist PROPERTIES FIXTURES_SETUP dist_wheel TIMEOUT 3600 PROCESSORS 2 COST 2400
                     LABELS install)

# The roots the tests below run in, each a fixture of its own (tests/install/make_root.sh): made
# once and kept in ~/.cache/opforge/roots, so on a warm machine they take a second. Cold, they are
# mostly downloads (debootstrap, apt, pip), made beside the CPU-bound tests instead of before them.
# Where a root cannot be made they say SKIP, and so do the tests that need it (ROOT_RETRY=0: no
# second try). A test that enters a root (in_root.sh writes its /tmp/opforge-test) holds
# RESOURCE_LOCK on it; `--root` builds only read it.
add_test(NAME roots.bullseye COMMAND ${OPFORGE_INSTALL}/make_root.sh bullseye bullseye-dev)
set_tests_properties(roots.bullseye PROPERTIES FIXTURES_SETUP "root_bullseye;root_bullseye_dev" TIMEOUT 1800
                     COST 700 LABELS "install;roots" SKIP_REGULAR_EXPRESSION "SKIP:")
add_test(NAME roots.bookworm_cuda COMMAND ${OPFORGE_INSTALL}/make_root.sh bookworm-cuda)
set_tests_properties(roots.bookworm_cuda PROPERTIES FIXTURES_SETUP root_bookworm_cuda TIMEOUT 3600
                     COST 1200 LABELS "install;roots" SKIP_REGULAR_EXPRESSION "SKIP:")
add_test(NAME roots.trixie_cuda COMMAND ${OPFORGE_INSTALL}/make_root.sh trixie-cuda)
set_tests_properties(roots.trixie_cuda PROPERTIES FIXTURES_SETUP root_trixie_cuda TIMEOUT 3600
                     COST 2000 LABELS "install;roots" SKIP_REGULAR_EXPRESSION "SKIP:")

# Grace's userland (Debian 12 arm64) on this x86-64 machine, its programs run by qemu-user-static
# through binfmt_misc (tests/install/binfmt.sh mounts and enables it): a root of its own, and PyPI's
# aarch64 torch 2.15.0 in it as a second, optional fixture (5 GB with its CUDA 13 libraries), so
# that what needs only the root does not wait for torch.
add_test(NAME roots.bookworm_arm64 COMMAND ${OPFORGE_INSTALL}/make_root.sh bookworm-arm64)
set_tests_properties(roots.bookworm_arm64 PROPERTIES FIXTURES_SETUP root_bookworm_arm64 TIMEOUT 1800
                     COST 500 LABELS "install;roots" SKIP_REGULAR_EXPRESSION "SKIP:")
add_test(NAME roots.bookworm_arm64_torch COMMAND ${OPFORGE_INSTALL}/make_root.sh bookworm-arm64-torch)
set_tests_properties(roots.bookworm_arm64_torch PROPERTIES FIXTURES_SETUP root_bookworm_arm64_torch
                     FIXTURES_REQUIRED root_bookworm_arm64 TIMEOUT 1800 COST 300 LABELS "install;roots"
                     SKIP_REGULAR_EXPRESSION "SKIP:")

add_test(NAME install.glibc_floor
         COMMAND ${OPFORGE_INSTALL}/glibc_floor.sh $<TARGET_FILE:opforge> ${OPFORGE_DIST_OUT}
                 ${CMAKE_SOURCE_DIR}/.venv-tools)
set_tests_properties(install.glibc_floor PROPERTIES FIXTURES_REQUIRED dist_wheel TIMEOUT 300 LABELS install)

add_test(NAME install.reproducible
         COMMAND ${OPFORGE_INSTALL}/reproducible.sh ${CMAKE_SOURCE_DIR} ${OPFORGE_DIST_OUT}
                 ${CMAKE_BINARY_DIR}/install/clone)
set_tests_properties(install.reproducible PROPERTIES FIXTURES_REQUIRED dist_wheel TIMEOUT 3600 PROCESSORS 2
                     COST 300 LABELS install SKIP_REGULAR_EXPRESSION "SKIP:")

add_test(NAME install.bullseye COMMAND ${OPFORGE_INSTALL}/bullseye.sh ${OPFORGE_DIST_OUT})
set_tests_properties(install.bullseye PROPERTIES FIXTURES_REQUIRED "dist_wheel;root_bullseye" TIMEOUT 1800
                     PROCESSORS 2 COST 300 LABELS install ENVIRONMENT ROOT_RETRY=0
                     RESOURCE_LOCK root_bullseye SKIP_REGULAR_EXPRESSION "SKIP:")

# Debian's own CUDA 11.8 (nvidia-cuda-toolkit from non-free) beside the host's NVIDIA 13.0 in a
# Debian 12 root: doctor, two builds from two folders, CUDA_HOME=/usr, inspect, import.
add_test(NAME install.bookworm_cuda COMMAND ${OPFORGE_INSTALL}/bookworm_cuda.sh ${OPFORGE_DIST_OUT})
set_tests_properties(install.bookworm_cuda PROPERTIES FIXTURES_REQUIRED "dist_wheel;root_bookworm_cuda"
                     TIMEOUT 3600 PROCESSORS 2 COST 600 LABELS install ENVIRONMENT ROOT_RETRY=0
                     RESOURCE_LOCK root_bookworm_cuda SKIP_REGULAR_EXPRESSION "SKIP:")
# `opforge build default --root R` in a Debian 11 root with python3-dev (the second Debian 11 root,
# "bullseye-dev": install.bullseye checks the build without python3-dev): a manylinux_2_31 (or
# lower) abi3 wheel that installs and loads there and here. A development opforge runs inside with
# the host's loader (src/root/).
add_test(NAME install.root_build COMMAND ${OPFORGE_INSTALL}/root_build.sh $<TARGET_FILE:opforge>
                                         ${CMAKE_BINARY_DIR}/install/root_build)
set_tests_properties(install.root_build PROPERTIES FIXTURES_REQUIRED root_bullseye_dev TIMEOUT 1800
                     PROCESSORS 2 COST 400 LABELS install ENVIRONMENT ROOT_RETRY=0
                     RESOURCE_LOCK root_bullseye_dev SKIP_REGULAR_EXPRESSION "SKIP:")
# A build inside a root is the same build: a setuptools project whose extension embeds CFLAGS'
# MARK built here and with --root (both say MARK=red, the records hold the same environment), a
# CFLAGS naming a folder the root lacks refused by name, and `verify --allow-run` of the root's
# record rebuilt in the root (identical), exit 2 when that root is gone or another system. Its
# --root builds only read the root (no RESOURCE_LOCK).
add_test(NAME install.root_same_build COMMAND ${OPFORGE_INSTALL}/root_same_build.sh $<TARGET_FILE:opforge>
                                              ${CMAKE_BINARY_DIR}/install/root_same_build)
set_tests_properties(install.root_same_build PROPERTIES FIXTURES_REQUIRED root_bullseye_dev TIMEOUT 1800
                     PROCESSORS 2 COST 120 LABELS install ENVIRONMENT ROOT_RETRY=0 SKIP_REGULAR_EXPRESSION "SKIP:")
# Debian 13's own CUDA 12.4 with PyPI's torch 2.6.0 (its exact pair) and gcc 13 while gcc 14 is the
# default: the fixture torch extension built in the root by the platform wheel, and from here with
# `--root` (the root's own toolkit, its glibc the tag's floor).
add_test(NAME install.trixie_cuda COMMAND ${OPFORGE_INSTALL}/trixie_cuda.sh ${OPFORGE_DIST_OUT}
                                          $<TARGET_FILE:opforge> ${CMAKE_BINARY_DIR}/install/trixie_cuda)
set_tests_properties(install.trixie_cuda PROPERTIES FIXTURES_REQUIRED "dist_wheel;root_trixie_cuda"
                     TIMEOUT 3600 PROCESSORS 2 COST 1200 LABELS install ENVIRONMENT ROOT_RETRY=0
                     RESOURCE_LOCK root_trixie_cuda SKIP_REGULAR_EXPRESSION "SKIP:")

# aarch64 (#50). The root is one: its python3 says aarch64 and a NEON program cross-compiled here
# with aarch64-linux-gnu-g++ runs in it; PyPI's aarch64 torch imports in it (no GPU).
add_test(NAME install.arm64_root COMMAND ${OPFORGE_INSTALL}/arm64_root_check.sh ${CMAKE_BINARY_DIR}/install/arm64_root)
set_tests_properties(install.arm64_root PROPERTIES FIXTURES_REQUIRED root_bookworm_arm64 TIMEOUT 600
                     LABELS install ENVIRONMENT ROOT_RETRY=0 RESOURCE_LOCK root_bookworm_arm64
                     SKIP_REGULAR_EXPRESSION "SKIP:")
add_test(NAME install.arm64_torch COMMAND ${OPFORGE_INSTALL}/arm64_torch_check.sh)
set_tests_properties(install.arm64_torch PROPERTIES FIXTURES_REQUIRED root_bookworm_arm64_torch TIMEOUT 600
                     LABELS install ENVIRONMENT ROOT_RETRY=0 RESOURCE_LOCK root_bookworm_arm64
                     SKIP_REGULAR_EXPRESSION "SKIP:")
# The aarch64 platform wheel (scripts/dist --platform aarch64), after the x86-64 one: build-dist/'s
# packer is built by then and only opforge is compiled again, for aarch64 (fixture
# dist_wheel_aarch64). Then, in the arm64 root under emulation, pip installs it, and
# `opforge --version` and `opforge doctor` run.
set(OPFORGE_DIST_AARCH64_OUT ${CMAKE_BINARY_DIR}/install/dist-aarch64)
add_test(NAME install.dist_aarch64 COMMAND ${OPFORGE_INSTALL}/dist_aarch64.sh ${CMAKE_SOURCE_DIR}
                                           ${OPFORGE_DIST_AARCH64_OUT} ${CMAKE_SOURCE_DIR}/.venv-tools)
set_tests_properties(install.dist_aarch64 PROPERTIES FIXTURES_SETUP dist_wheel_aarch64 FIXTURES_REQUIRED dist_wheel
                     TIMEOUT 3600 PROCESSORS 2 COST 1200 LABELS install)
# A second clone gives the same aarch64 bytes too (its own clone: install.reproducible's may be busy).
add_test(NAME install.reproducible_aarch64
         COMMAND ${OPFORGE_INSTALL}/reproducible.sh ${CMAKE_SOURCE_DIR} ${OPFORGE_DIST_AARCH64_OUT}
                 ${CMAKE_BINARY_DIR}/install/clone-aarch64 aarch64)
set_tests_properties(install.reproducible_aarch64 PROPERTIES FIXTURES_REQUIRED dist_wheel_aarch64 TIMEOUT 3600
                     PROCESSORS 2 COST 300 LABELS install SKIP_REGULAR_EXPRESSION "SKIP:")
add_test(NAME install.arm64_dist COMMAND ${OPFORGE_INSTALL}/arm64_dist.sh ${OPFORGE_DIST_AARCH64_OUT})
set_tests_properties(install.arm64_dist PROPERTIES FIXTURES_REQUIRED "dist_wheel_aarch64;root_bookworm_arm64"
                     TIMEOUT 900 LABELS install ENVIRONMENT ROOT_RETRY=0 RESOURCE_LOCK root_bookworm_arm64
                     SKIP_REGULAR_EXPRESSION "SKIP:")
# The bundled ops cross-built for aarch64 (e2e.cross_aarch64's wheel) used through their Python
# package in the arm64 root with aarch64 torch, under emulation: utils, cpu_adam against a reference
# Adam, aio on a file, the overflow statistics and DebugUnderflowOverflow with the C hook extension.
add_test(NAME install.arm64_ops COMMAND ${OPFORGE_INSTALL}/arm64_ops_check.sh ${CMAKE_BINARY_DIR}/e2e/cross_aarch64/a/src.dist)
set_tests_properties(install.arm64_ops PROPERTIES FIXTURES_REQUIRED "cross_wheel_aarch64;root_bookworm_arm64_torch"
                     TIMEOUT 900 LABELS "install;aarch64" ENVIRONMENT ROOT_RETRY=0 RESOURCE_LOCK root_bookworm_arm64
                     SKIP_REGULAR_EXPRESSION "SKIP:")
# A setup.py torch CUDA extension cross-built for aarch64 (e2e.cross_extension's wheel) imported
# with the aarch64 torch in the arm64 root under emulation, its CPU path computing.
add_test(NAME install.arm64_extension COMMAND ${OPFORGE_INSTALL}/arm64_extension_check.sh
                                              ${CMAKE_BINARY_DIR}/e2e/cross_extension/a/ext/dist)
set_tests_properties(install.arm64_extension PROPERTIES FIXTURES_REQUIRED "cross_extension_aarch64;root_bookworm_arm64_torch"
                     TIMEOUT 900 LABELS "install;aarch64" ENVIRONMENT ROOT_RETRY=0 RESOURCE_LOCK root_bookworm_arm64
                     SKIP_REGULAR_EXPRESSION "SKIP:")
# A Grace node building for itself: opforge's aarch64 wheel builds the default recipe in the arm64
# root under emulation with NVIDIA's aarch64 CUDA 13.0 wheels as its toolkit (about 110 CPU-s).
add_test(NAME install.arm64_native_build COMMAND ${OPFORGE_INSTALL}/arm64_native_build.sh ${OPFORGE_DIST_AARCH64_OUT})
set_tests_properties(install.arm64_native_build PROPERTIES FIXTURES_REQUIRED "dist_wheel_aarch64;root_bookworm_arm64"
                     TIMEOUT 1200 COST 200 LABELS "install;aarch64" ENVIRONMENT ROOT_RETRY=0
                     RESOURCE_LOCK root_bookworm_arm64 SKIP_REGULAR_EXPRESSION "SKIP:")
