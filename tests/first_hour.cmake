# What a new user meets first (tests/first_hour/): live progress on a terminal and in a pipe, and
# missing tools as exit 3 before any work. Each builds one tiny CPU op (a few seconds).
foreach(name progress missing_tools)
  add_test(NAME first_hour.${name}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/first_hour/${name}.sh $<TARGET_FILE:opforge>
                   ${CMAKE_BINARY_DIR}/first_hour/${name})
  set_tests_properties(first_hour.${name} PROPERTIES TIMEOUT 300 LABELS e2e)
endforeach()
