# The overflow tests that need transformers: run with the PyPI torch environment of scripts/torch-venv
# (tests/python/torch_venv/pytest.sh: skipped without it, failed without it under CI=true), against
# the default wheel unpacked by the `default_wheel` fixture (tests/e2e.cmake).
foreach(stem test_overflow_transformers test_overflow_trainer)
  add_test(NAME python_venv.${stem}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/python/torch_venv/pytest.sh
                   ${CMAKE_CURRENT_SOURCE_DIR}/python/torch_venv/${stem}.py
           WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/python/torch_venv)
  set_tests_properties(python_venv.${stem} PROPERTIES
    FIXTURES_REQUIRED "default_wheel;torch_venv"
    ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/e2e/default/site;OPFORGE_TEST_DATA=${CMAKE_CURRENT_SOURCE_DIR}/data;PYTHONDONTWRITEBYTECODE=1"
    TIMEOUT 900
    SKIP_RETURN_CODE 77)
endforeach()
