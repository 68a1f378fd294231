# cmake -D BIN=opforge_tests -D RUN=tests/unit/suite.sh -D OUT=FILE -P suites.cmake: after each build
# of the unit tests (POST_BUILD), writes the ctest file of one test per GoogleTest suite, named by
# the suite: `BIN --gtest_list_tests` names them (a suite line ends with '.', its tests are indented).
execute_process(COMMAND ${BIN} --gtest_list_tests OUTPUT_VARIABLE listing RESULT_VARIABLE rc TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${BIN} --gtest_list_tests failed (${rc}):\n${listing}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(script "")
foreach(line IN LISTS lines)
  # A suite line: the name and a dot, then (typed suites) a comment.
  if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
    set(suite ${CMAKE_MATCH_1})
    string(APPEND script "add_test([=[${suite}]=] ${RUN} ${BIN} [=[${suite}]=])\n"
                         "set_tests_properties([=[${suite}]=] PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)\n")
  endif()
endforeach()
file(WRITE ${OUT} "${script}")
