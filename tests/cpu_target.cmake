# [build] cpu_target and inspect's ISA levels through the real binary (tests/e2e/cpu_target*.sh).
add_test(NAME e2e.cpu_target
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/cpu_target.sh $<TARGET_FILE:opforge> ${CMAKE_BINARY_DIR}/e2e/cpu_target)
set_tests_properties(e2e.cpu_target PROPERTIES TIMEOUT 900 LABELS e2e)
add_test(NAME e2e.cpu_target_own_ops
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/cpu_target_own_ops.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/default ${CMAKE_BINARY_DIR}/e2e/cpu_target_own_ops)
set_tests_properties(e2e.cpu_target_own_ops PROPERTIES FIXTURES_REQUIRED default_wheel TIMEOUT 900 LABELS e2e)
