# CI wheel generation: [cuda] provision = "pypi" (torch's exact toolkit from NVIDIA's PyPI wheels)
# and a two-cell [matrix] (torch 2.14 with the installed CUDA 13.0, torch 2.15 with a provisioned
# 13.2) into one indexed wheelhouse. They need scripts/torch-venv's environments: they fail in CI
# without them and skip elsewhere. Label `variants` (ctest -L variants).
add_test(NAME e2e.provision
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/provision.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/provision)
set_tests_properties(e2e.provision PROPERTIES TIMEOUT 1800 LABELS "e2e;variants" SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
add_test(NAME e2e.matrix
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/matrix.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/matrix)
set_tests_properties(e2e.matrix PROPERTIES TIMEOUT 3600 LABELS "e2e;variants" SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
