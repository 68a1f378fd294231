# opforge's platform wheel (scripts/dist) and where it installs: the `dist_wheel` fixture writes it
# into build/install/dist; the glibc floor is read with opforge's own ELF reader and checked
# against auditwheel; a second clone of HEAD gives the same bytes; a Debian 11 root (debootstrap,
# cached outside the repository) installs and runs it. The toolchain and static libraries are
# cached under ~/.cache/opforge/dist (scripts/dist.d/static-deps.sh).
set(OPFORGE_DIST_OUT ${CMAKE_BINARY_DIR}/install/dist)
# From an empty folder: the tests after it read the one wheel of this commit.
add_test(NAME install.dist COMMAND bash -c "rm -rf \"$1\" && \"$0\" \"$1\"" ${CMAKE_SOURCE_DIR}/scripts/dist
                                   ${OPFORGE_DIST_OUT})
set_tests_properties(install.dist PROPERTIES FIXTURES_SETUP dist_wheel TIMEOUT 3600 RUN_SERIAL TRUE)

add_test(NAME install.glibc_floor
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/glibc_floor.sh $<TARGET_FILE:opforge> ${OPFORGE_DIST_OUT}
                 ${CMAKE_SOURCE_DIR}/.venv-tools)
set_tests_properties(install.glibc_floor PROPERTIES FIXTURES_REQUIRED dist_wheel TIMEOUT 300)

add_test(NAME install.reproducible
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/reproducible.sh ${CMAKE_SOURCE_DIR} ${OPFORGE_DIST_OUT}
                 ${CMAKE_BINARY_DIR}/install/clone)
set_tests_properties(install.reproducible PROPERTIES FIXTURES_REQUIRED dist_wheel TIMEOUT 3600 RUN_SERIAL TRUE
                     SKIP_REGULAR_EXPRESSION "SKIP:")

add_test(NAME install.bullseye COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/bullseye.sh ${OPFORGE_DIST_OUT})
set_tests_properties(install.bullseye PROPERTIES FIXTURES_REQUIRED dist_wheel TIMEOUT 1800 RUN_SERIAL TRUE
                     SKIP_REGULAR_EXPRESSION "SKIP:")

# Debian's own CUDA 11.8 (nvidia-cuda-toolkit from non-free) beside the host's NVIDIA 13.0 in a
# Debian 12 root: doctor, two builds from two folders, CUDA_HOME=/usr, inspect, import.
add_test(NAME install.bookworm_cuda COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/bookworm_cuda.sh ${OPFORGE_DIST_OUT})
set_tests_properties(install.bookworm_cuda PROPERTIES FIXTURES_REQUIRED dist_wheel TIMEOUT 3600 RUN_SERIAL TRUE
                     SKIP_REGULAR_EXPRESSION "SKIP:")
# `opforge build default --root R` in a Debian 11 root with python3-dev (tests/install/root.sh's
# second root, "bullseye-dev"): a manylinux_2_31 (or lower) abi3 wheel that installs and loads there
# and here. A development opforge runs inside with the host's loader (src/root/).
add_test(NAME install.root_build COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/root_build.sh $<TARGET_FILE:opforge>
                                         ${CMAKE_BINARY_DIR}/install/root_build)
set_tests_properties(install.root_build PROPERTIES TIMEOUT 1800 RUN_SERIAL TRUE SKIP_REGULAR_EXPRESSION "SKIP:")
# Debian 13's own CUDA 12.4 with PyPI's torch 2.6.0 (its exact pair) and gcc 13 while gcc 14 is the
# default: the fixture torch extension built in the root by the platform wheel, and from here with
# `--root` (the root's own toolkit, its glibc the tag's floor).
add_test(NAME install.trixie_cuda COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/trixie_cuda.sh ${OPFORGE_DIST_OUT}
                                          $<TARGET_FILE:opforge> ${CMAKE_BINARY_DIR}/install/trixie_cuda)
set_tests_properties(install.trixie_cuda PROPERTIES FIXTURES_REQUIRED dist_wheel TIMEOUT 3600 RUN_SERIAL TRUE
                     SKIP_REGULAR_EXPRESSION "SKIP:")
