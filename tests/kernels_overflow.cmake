# Overflow op: C++ tests of the CPU implementation (its own executable, compiled from the op's CPU
# sources, which are not in opforge_core) and compile checks of the CUDA sources with the real nvcc.
set(OVF_DIR ${CMAKE_CURRENT_SOURCE_DIR}/../src/kernels/overflow)
add_executable(kernels_overflow_tests ${CMAKE_CURRENT_SOURCE_DIR}/kernels_overflow_test.cpp
               ${OVF_DIR}/stats_cpu.cpp)
target_include_directories(kernels_overflow_tests PRIVATE ${OVF_DIR})
target_compile_options(kernels_overflow_tests PRIVATE ${OPFORGE_WARNINGS})
target_link_libraries(kernels_overflow_tests PRIVATE GTest::gtest_main)
gtest_discover_tests(kernels_overflow_tests TEST_PREFIX "kernels_overflow." DISCOVERY_TIMEOUT 60
                     PROPERTIES TIMEOUT 300)

# Every .cu file compiles with the real nvcc for each architecture of the default recipe (its
# [arch] fallback, what a machine without GPUs builds: "8.0;8.6;9.0+PTX" -> 80 86 90).
set(OVF_NVCC /usr/local/cuda/bin/nvcc)
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/../recipes/default.toml OVF_FALLBACK REGEX "^fallback *=")
string(REGEX MATCHALL "[0-9]+\\.[0-9]+" OVF_ARCH_ENTRIES "${OVF_FALLBACK}")
set(OVF_ARCHES)
foreach(entry IN LISTS OVF_ARCH_ENTRIES)
  string(REPLACE "." "" sm ${entry})
  list(APPEND OVF_ARCHES ${sm})
endforeach()
if(NOT OVF_ARCHES)
  message(FATAL_ERROR "no [arch] fallback found in recipes/default.toml")
endif()
if(EXISTS ${OVF_NVCC})
  foreach(arch IN LISTS OVF_ARCHES)
    foreach(cu stats test_kernels)
      add_test(NAME kernels_overflow.nvcc.${cu}.sm_${arch}
               COMMAND ${OVF_NVCC} -std=c++17 -O2 -Werror all-warnings -Xcompiler -fPIC,-fvisibility=hidden,-Wall
                       -gencode arch=compute_${arch},code=sm_${arch} -I${OVF_DIR}
                       -c ${OVF_DIR}/${cu}.cu -o ${CMAKE_CURRENT_BINARY_DIR}/ovf_${cu}_sm${arch}.o)
      set_tests_properties(kernels_overflow.nvcc.${cu}.sm_${arch} PROPERTIES TIMEOUT 300)
    endforeach()
  endforeach()
endif()
