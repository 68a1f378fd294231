# The real DeepSpeed (PyPI sdist, PyPI torch with CUDA) built by the command backend, installed and
# run; two builds from different folders compared byte for byte. Needs scripts/torch-venv's
# environment: fails in CI without it, skips elsewhere. Label `deepspeed` (ctest -L deepspeed).
add_test(NAME e2e.deepspeed
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/deepspeed.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/deepspeed)
set_tests_properties(e2e.deepspeed PROPERTIES TIMEOUT 3600 LABELS "e2e;deepspeed" SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
