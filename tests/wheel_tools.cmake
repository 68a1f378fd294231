# The packaging ecosystem's checkers on the default wheel (built by the `default_wheel` fixture of
# tests/e2e.cmake): pip install into a fresh venv + load every op library, wheel unpack,
# installer --validate-record all, check-wheel-contents, twine check --strict, auditwheel show.
# The same script runs on hand-built wheels in tests/wheel_tools_test.cpp.
add_test(NAME wheel_tools.default
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/wheel_tools/check_wheel.sh
                 "${CMAKE_BINARY_DIR}/e2e/default/dist/*.whl"
                 ${CMAKE_SOURCE_DIR}/.venv-tools
                 ${CMAKE_BINARY_DIR}/wheel_tools/default)
set_tests_properties(wheel_tools.default PROPERTIES
  FIXTURES_REQUIRED default_wheel
  TIMEOUT 600)
