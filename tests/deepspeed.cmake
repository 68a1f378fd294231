# The real DeepSpeed (PyPI sdist, PyPI torch with CUDA) built by the command backend, installed and
# run. Needs scripts/torch-venv's environment: fails in CI without it, skips elsewhere.
# Label `deepspeed` (ctest -L deepspeed).
add_test(NAME e2e.deepspeed
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/deepspeed.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/deepspeed install)
set_tests_properties(e2e.deepspeed PROPERTIES TIMEOUT 3600 LABELS "e2e;deepspeed" SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
# The same, then a second build from a file:// git repository in another folder, compared byte for
# byte. Disabled: the two fused_adam libraries still differ in 4 bytes of their .nv_fatbin section
# (cause not found yet; see docs/external-projects.md). Run it by hand with
# `ctest -R e2e.deepspeed_reproducible -C any` after removing DISABLED, or the script with `all`.
add_test(NAME e2e.deepspeed_reproducible
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/deepspeed.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/deepspeed-reproducible all)
set_tests_properties(e2e.deepspeed_reproducible PROPERTIES TIMEOUT 3600 LABELS "e2e;deepspeed" SKIP_RETURN_CODE 77
                     RUN_SERIAL TRUE DISABLED TRUE)
