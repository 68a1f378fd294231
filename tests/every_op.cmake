# Every op that can be built is built: a DeepSpeed-shaped tree with a good CUDA op, a good CPU op,
# an op whose extension cannot be constructed and one with a real nvcc error (e2e/every_op.sh).
# The builds keep both cores busy (PROCESSORS 2, tests/e2e.cmake).
add_test(NAME e2e.every_op
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/every_op.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/every_op)
set_tests_properties(e2e.every_op PROPERTIES TIMEOUT 900 LABELS e2e SKIP_RETURN_CODE 77 PROCESSORS 2 COST 200)
# jobs = "auto" under a real cgroup memory limit (skipped where no cgroup can be made).
add_test(NAME e2e.cgroup_limit
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/cgroup_limit.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/cgroup_limit)
set_tests_properties(e2e.cgroup_limit PROPERTIES TIMEOUT 600 LABELS e2e SKIP_RETURN_CODE 77 PROCESSORS 2 COST 150)
