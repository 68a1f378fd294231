# Shared compile cache across two "nodes" (redis + ccache), end to end. Skips (77) outside CI when
# redis or ccache is missing. Its builds keep both cores busy (PROCESSORS 2).
add_test(NAME e2e.cache_two_nodes
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/e2e/cache_two_nodes.sh $<TARGET_FILE:opforge>
                 ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}/e2e/cache_two_nodes)
set_tests_properties(e2e.cache_two_nodes PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 1800 LABELS e2e PROCESSORS 2 COST 200)
