# Python tests: one CTest test per tests/python/test_*.py, run with Debian's python3 (numpy, torch
# 1.13 CPU), against the default wheel unpacked by the `default_wheel` fixture (tests/e2e.cmake).
file(GLOB OPFORGE_PY_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/python/test_*.py)
set(OPFORGE_E2E_SITE ${CMAKE_BINARY_DIR}/e2e/default/site)
foreach(py IN LISTS OPFORGE_PY_TESTS)
  get_filename_component(stem ${py} NAME_WE)
  add_test(NAME python.${stem}
           COMMAND /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider ${py}
           WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/python)
  set_tests_properties(python.${stem} PROPERTIES
    FIXTURES_REQUIRED default_wheel
    ENVIRONMENT "PYTHONPATH=${OPFORGE_E2E_SITE};OPFORGE_TEST_DATA=${CMAKE_CURRENT_SOURCE_DIR}/data;PYTHONDONTWRITEBYTECODE=1"
    TIMEOUT 900
    SKIP_RETURN_CODE 5)  # pytest: nothing ran (a module-level skip, e.g. no GPU) -> CTest "skipped"
endforeach()

# ruff and mypy on src/python (pinned in the tools venv that scripts/deps makes): any finding fails.
add_test(NAME python.lint
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/python/lint.sh ${CMAKE_SOURCE_DIR}/.venv-tools
                 ${CMAKE_SOURCE_DIR}/src/python ${CMAKE_BINARY_DIR}/python_lint)
set_tests_properties(python.lint PROPERTIES TIMEOUT 300)
