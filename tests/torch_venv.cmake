# The PyPI torch environments (scripts/torch-venv: torch 2.15 and 2.14, the DeepSpeed sdist) as a
# fixture: every test that uses them requires torch_venv, so ctest starts right after the build and
# runs the rest while they download (scripts/test starts scripts/torch-venv beside the build; this
# waits for it through its lock; tests/torch_venv_make.sh says what happens where they cannot be
# made). COST: started first.
add_test(NAME torch_venv.make COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/torch_venv_make.sh)
set_tests_properties(torch_venv.make PROPERTIES FIXTURES_SETUP torch_venv TIMEOUT 3600 COST 5000
                     SKIP_REGULAR_EXPRESSION "SKIP:")
# The one unit test that reads torch-venv's headers (CudaTorchStable.TheTorchEnvironmentsHeaders
# skips without them), in its suite's ctest test: tests/CMakeLists.txt adds that when ctest starts,
# so its property is set then, by a file ctest includes after the unit tests' list.
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/torch_venv_unit.cmake
     "set_tests_properties(CudaTorchStable PROPERTIES FIXTURES_REQUIRED torch_venv)\n")
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${CMAKE_CURRENT_BINARY_DIR}/torch_venv_unit.cmake)
