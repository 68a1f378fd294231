# [source] sdist end to end (tests/e2e/sdist.sh): hostile archives refused by `opforge plan`, a
# project planned from its unpacked sdist, and (with the torch 2.14 environment) built from a URL.
add_test(NAME e2e.sdist
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/sdist.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/sdist)
set_tests_properties(e2e.sdist PROPERTIES FIXTURES_REQUIRED torch_venv TIMEOUT 1800 LABELS e2e SKIP_RETURN_CODE 77
                     PROCESSORS 2 COST 150)
