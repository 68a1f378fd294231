# The fuzzers (tests/fuzz/): one build of their own with clang-19 and the sanitizers, then each
# harness over its committed seed corpus plus a bounded number of new inputs. New inputs go to
# a scratch folder in the build tree; the committed corpus is only read. bench/fuzz/run.sh does
# the long runs (1,000,000 executions each).
set(OPFORGE_FUZZ_CXX clang++-19 CACHE STRING "clang with libFuzzer for the fuzz build")
set(OPFORGE_FUZZ_RUNS 20000 CACHE STRING "new inputs each fuzzer tries in the test suite")
set(fuzz_build ${CMAKE_BINARY_DIR}/fuzz)
string(REPLACE "clang++" "clang" fuzz_cc "${OPFORGE_FUZZ_CXX}")
add_test(NAME fuzz.build
         COMMAND ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${CMAKE_SOURCE_DIR} CCACHE_NOHASHDIR=1
                 ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/build.sh ${CMAKE_CURRENT_SOURCE_DIR}/fuzz ${fuzz_build}
                 ${fuzz_cc} ${OPFORGE_FUZZ_CXX})
set_tests_properties(fuzz.build PROPERTIES FIXTURES_SETUP fuzz_build TIMEOUT 1800 LABELS fuzz PROCESSORS 2 COST 400)

file(GLOB fuzz_harnesses CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/*_fuzz.cpp)
foreach(harness IN LISTS fuzz_harnesses)
  get_filename_component(name ${harness} NAME_WE)
  string(REGEX REPLACE "_fuzz$" "" corpus ${name})
  # A harness's dictionary (tests/fuzz/<name>.dict: the keys its reader looks for), when it has one.
  set(dict_arg "")
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/${corpus}.dict)
    set(dict_arg -dict=${CMAKE_CURRENT_SOURCE_DIR}/fuzz/${corpus}.dict)
  endif()
  add_test(NAME fuzz.${corpus}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run_one.sh ${fuzz_build}/${name}
                   ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/${corpus} ${fuzz_build}/work/${corpus}
                   -runs=${OPFORGE_FUZZ_RUNS} ${dict_arg})
  set_tests_properties(fuzz.${corpus} PROPERTIES FIXTURES_REQUIRED fuzz_build TIMEOUT 900 LABELS fuzz)
endforeach()
