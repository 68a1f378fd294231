# The source build with the oldest compilers opforge supports, as Ubuntu 22.04 and RHEL 9 have
# them: configure and build the whole project and its tests with g++-11 under OPFORGE_WERROR, in a
# build folder of its own that later runs reuse (-O0 -g0 keeps it cheap; ccache when present). Its
# build runs nproc compiles: PROCESSORS 2 (not RUN_SERIAL, which would leave it for the end).
# (clang++ 14 builds it too: `tests/source_build/build.sh . build-clang clang clang++ opforge`; not
# in the suite, whose CI time is spent on the gcc 11 build.)
find_program(OPFORGE_GXX11 g++-11)
find_program(OPFORGE_GCC11 gcc-11)
if(OPFORGE_GXX11 AND OPFORGE_GCC11)
  add_test(NAME source_build.gcc11
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/source_build/build.sh ${CMAKE_SOURCE_DIR}
                   ${CMAKE_BINARY_DIR}/source_build/gcc11 ${OPFORGE_GCC11} ${OPFORGE_GXX11} opforge --check-the-rest)
  set_tests_properties(source_build.gcc11 PROPERTIES TIMEOUT 1800 PROCESSORS 2 COST 600)
else()
  add_test(NAME source_build.gcc11 COMMAND ${CMAKE_COMMAND} -E echo "SKIP: g++-11 is not installed (scripts/deps installs it)")
  set_tests_properties(source_build.gcc11 PROPERTIES SKIP_REGULAR_EXPRESSION "SKIP:")
endif()
