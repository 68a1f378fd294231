# The CPU ops' unit tests: one executable per op, compiled from the op's own sources (they are not
# part of opforge_core) with the same per-file ISA flags as src/kernels/<op>/op.toml (its common
# sources and [machine.x86_64]); the aarch64 ones cross-compiled and run under qemu at the end.
set(OPFORGE_KERNELS ${CMAKE_SOURCE_DIR}/src/kernels)

add_executable(kernels_aio_test ${CMAKE_CURRENT_SOURCE_DIR}/kernels_aio_test.cpp
               ${OPFORGE_KERNELS}/aio/aio.cpp)
target_include_directories(kernels_aio_test PRIVATE ${OPFORGE_KERNELS}/aio)
target_link_libraries(kernels_aio_test PRIVATE GTest::gtest_main ${CMAKE_DL_LIBS})

add_executable(kernels_cpu_adam_test ${CMAKE_CURRENT_SOURCE_DIR}/kernels_cpu_adam_test.cpp
               ${OPFORGE_KERNELS}/cpu_adam/adam.cpp ${OPFORGE_KERNELS}/cpu_adam/adam_scalar.cpp
               ${OPFORGE_KERNELS}/cpu_adam/adam_x86.cpp ${OPFORGE_KERNELS}/cpu_adam/adam_avx2.cpp
               ${OPFORGE_KERNELS}/cpu_adam/adam_avx512.cpp)
target_include_directories(kernels_cpu_adam_test PRIVATE ${OPFORGE_KERNELS}/cpu_adam ${OPFORGE_KERNELS}/utils)
set_source_files_properties(${OPFORGE_KERNELS}/cpu_adam/adam_scalar.cpp PROPERTIES
  COMPILE_OPTIONS "-fno-tree-vectorize;-fno-tree-slp-vectorize;-ffp-contract=off")
set_source_files_properties(${OPFORGE_KERNELS}/cpu_adam/adam_avx2.cpp PROPERTIES
  COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
set_source_files_properties(${OPFORGE_KERNELS}/cpu_adam/adam_avx512.cpp PROPERTIES
  COMPILE_OPTIONS "-mavx512f;-mavx512vl;-mavx512bw;-mavx512dq;-mfma;-mf16c")
target_link_libraries(kernels_cpu_adam_test PRIVATE GTest::gtest_main Threads::Threads)

add_executable(kernels_utils_test ${CMAKE_CURRENT_SOURCE_DIR}/kernels_utils_test.cpp
               ${OPFORGE_KERNELS}/utils/flatten.cpp)
target_include_directories(kernels_utils_test PRIVATE ${OPFORGE_KERNELS}/utils)
target_link_libraries(kernels_utils_test PRIVATE GTest::gtest_main Threads::Threads)

foreach(t kernels_aio_test kernels_cpu_adam_test kernels_utils_test)
  target_compile_options(${t} PRIVATE ${OPFORGE_WARNINGS})
  gtest_discover_tests(${t} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600)
endforeach()

# aarch64: the ops built from op.toml by aarch64-linux-gnu-g++ and run under qemu-aarch64-static
# (NEON, SVE at two vector lengths, the level override, utils); SKIP without either tool.
add_test(NAME kernels.aarch64
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/kernels_aarch64.sh ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/kernels_aarch64)
set_tests_properties(kernels.aarch64 PROPERTIES TIMEOUT 900 LABELS "kernels;aarch64" SKIP_REGULAR_EXPRESSION "SKIP:"
                     COST 60)

# The guides' seed command end to end (its builds keep both cores busy).
add_test(NAME e2e.seed_command
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/seed_command.sh $<TARGET_FILE:opforge>
                 ${CMAKE_BINARY_DIR}/e2e/seed_command)
set_tests_properties(e2e.seed_command PROPERTIES TIMEOUT 1800 PROCESSORS 2 COST 200)
