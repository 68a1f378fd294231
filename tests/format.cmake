# Every C++/CUDA source is formatted with .clang-format: scripts/format --check fails when
# clang-format (scripts/deps installs it) would change a file. Fix with scripts/format.
add_test(NAME format.check COMMAND ${CMAKE_SOURCE_DIR}/scripts/format --check)
