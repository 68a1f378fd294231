# `python -m opforge_ops.nodecheck`: its pure parts with Debian's python3 (no torch), and the real
# gloo runs with the PyPI torch environment (tests/python/nodecheck_gloo_test.py finds it through
# $OPFORGE_TORCH_VENV and fails without it when CI=true). Both against the default wheel.
set(OPFORGE_NODECHECK_SITE ${CMAKE_BINARY_DIR}/e2e/default/site)
foreach(stem nodecheck_unit_test nodecheck_gloo_test)
  add_test(NAME python.${stem}
           COMMAND /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/python/${stem}.py
           WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/python)
  set_tests_properties(python.${stem} PROPERTIES
    FIXTURES_REQUIRED default_wheel
    ENVIRONMENT "PYTHONPATH=${OPFORGE_NODECHECK_SITE};OPFORGE_BINARY=$<TARGET_FILE:opforge>;OPFORGE_E2E_DIST=${CMAKE_BINARY_DIR}/e2e/default/dist;PYTHONDONTWRITEBYTECODE=1"
    TIMEOUT 900
    SKIP_RETURN_CODE 5)
endforeach()
# The gloo runs start up to 4 torch processes each: alone, so that their deadlines hold on 2 cores.
set_tests_properties(python.nodecheck_gloo_test PROPERTIES RUN_SERIAL TRUE FIXTURES_REQUIRED "default_wheel;torch_venv")
