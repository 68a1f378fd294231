# CI wheel generation: [cuda] provision = "pypi" (torch's exact toolkit from NVIDIA's PyPI wheels)
# and a two-cell [matrix] (torch 2.14 with the installed CUDA 13.0, torch 2.15 with a provisioned
# 13.2) into one indexed wheelhouse. They need scripts/torch-venv's environments: they fail in CI
# without them and skip elsewhere. Label `variants` (ctest -L variants). The builds keep both cores
# busy (PROCESSORS 2); COST (rough cold seconds on 2 cores) orders a first run.
add_test(NAME e2e.provision
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/provision.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/provision)
set_tests_properties(e2e.provision PROPERTIES FIXTURES_REQUIRED torch_venv TIMEOUT 1800 LABELS "e2e;variants" SKIP_RETURN_CODE 77 PROCESSORS 2
                     COST 300)
add_test(NAME e2e.matrix
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/matrix.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/matrix)
set_tests_properties(e2e.matrix PROPERTIES FIXTURES_REQUIRED torch_venv TIMEOUT 3600 LABELS "e2e;variants" SKIP_RETURN_CODE 77 PROCESSORS 2
                     COST 500)
# A setup.py that hardcodes its own -gencode list: the plan's arch list is what compiles
# ([arch] enforce), [build.env] reaches it, its download attempt is named (torch 2.14's environment).
add_test(NAME e2e.arch_enforce
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/arch_enforce.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/arch_enforce)
set_tests_properties(e2e.arch_enforce PROPERTIES FIXTURES_REQUIRED torch_venv TIMEOUT 1800 LABELS "e2e;variants" SKIP_RETURN_CODE 77 PROCESSORS 2
                     COST 200)
# A project that compiles CUDA only with FORCE_CUDA=1: without it the build is refused naming the
# switch (no wheel in dist/); with it, sm_90 only; with [arch] list = "none", a CPU wheel on purpose.
add_test(NAME e2e.cuda_switch
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/cuda_switch.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/cuda_switch)
set_tests_properties(e2e.cuda_switch PROPERTIES FIXTURES_REQUIRED torch_venv TIMEOUT 1800 LABELS "e2e;variants" SKIP_RETURN_CODE 77 PROCESSORS 2
                     COST 150)
# torch's setuptools path (use_ninja=False) starts $CUDA_HOME/bin/nvcc itself: through the toolkit
# view its nvcc is the wrapper all the same (sm_90 only, same bytes from two folders); the serial
# compiles are said; an nvcc run by its absolute path is named as escaping the wrapper.
add_test(NAME e2e.no_ninja
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/no_ninja.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/no_ninja)
set_tests_properties(e2e.no_ninja PROPERTIES FIXTURES_REQUIRED torch_venv TIMEOUT 1800 LABELS "e2e;variants" SKIP_RETURN_CODE 77 PROCESSORS 2
                     COST 200)
# A project that asks for sm_90a itself (tests/fixtures/arch_specific): kept with [arch] list =
# "9.0", per library in the summary and record; with "8.0" alone, stopped before nvcc runs.
add_test(NAME e2e.arch_specific
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/arch_specific.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/arch_specific)
set_tests_properties(e2e.arch_specific PROPERTIES FIXTURES_REQUIRED torch_venv TIMEOUT 1800 LABELS "e2e;variants" SKIP_RETURN_CODE 77 PROCESSORS 2
                     COST 120)
# The torch pin follows the linkage: a C++ ABI extension, a stable-ABI one, a C one, and the pin
# off; pip refuses the first for another torch (tests/fixtures/torch_link).
add_test(NAME e2e.torch_pin
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/torch_pin.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/torch_pin)
set_tests_properties(e2e.torch_pin PROPERTIES FIXTURES_REQUIRED torch_venv TIMEOUT 1800 LABELS "e2e;variants" SKIP_RETURN_CODE 77 PROCESSORS 2
                     COST 150)
# Precompiled torch headers: the same wheel with and without, made once and used by every file that
# reaches torch/extension.h, a file that defines a macro torch reads first refused, a new define a new
# header, ccache hits in a second folder (tests/fixtures/pch_extension). COST: about 620 CPU-s in the
# cold run of 2026-11-29 with four full builds, about 490 with three and a three-file one; among the
# suite's most expensive tests: started early, not last.
add_test(NAME e2e.pch
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/pch.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/pch)
set_tests_properties(e2e.pch PROPERTIES FIXTURES_REQUIRED torch_venv TIMEOUT 1800 LABELS "e2e;variants" SKIP_RETURN_CODE 77 PROCESSORS 2
                     COST 1200)
# causal-conv1d 1.7.0 from its PyPI sdist (cached in ~/.cache/opforge/sdist), one arch, as
# docs/external-projects.md's recipe says.
add_test(NAME e2e.causal_conv1d
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/causal_conv1d.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/causal_conv1d)
set_tests_properties(e2e.causal_conv1d PROPERTIES FIXTURES_REQUIRED torch_venv TIMEOUT 3600 LABELS "e2e;variants" SKIP_RETURN_CODE 77
                     PROCESSORS 2 COST 600)
# `opforge verify WHEEL --nodes`: a small wheel (nvcc and g++ here) against node reports edited
# from this machine's `doctor --json` (tests/fixtures/rollout).
add_test(NAME e2e.verify_nodes
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/verify_nodes.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/verify_nodes)
set_tests_properties(e2e.verify_nodes PROPERTIES TIMEOUT 600 LABELS "e2e;variants" PROCESSORS 1 COST 20)
# A command build killed half-way (SIGTERM, then SIGKILL) resumes its scratch tree: no finished
# step compiled again, the wheel the uninterrupted build's bytes (tests/fixtures/resumable, torch
# 2.14's environment). About two minutes on 2 cores.
add_test(NAME e2e.resume
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/resume.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/resume)
set_tests_properties(e2e.resume PROPERTIES FIXTURES_REQUIRED torch_venv TIMEOUT 900 LABELS "e2e;variants" SKIP_RETURN_CODE 77 PROCESSORS 2
                     COST 150)
# Four variants in one index (two torch releases × two arch lists, tests/fixtures/variant_matrix:
# one tiny kernel, no torch header): each variant's own index for plain pip, `opforge pick` for five
# nodes against variantlib's resolver, verify refusing a variants.json that disagrees. About 9
# CPU-seconds and 21 s on 2 busy cores (tests/cpu_time.sh, 2026-11-29: two builds of two cells,
# four pip downloads, one pip install).
add_test(NAME e2e.variant_matrix
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/variant_matrix.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/variant_matrix)
set_tests_properties(e2e.variant_matrix PROPERTIES FIXTURES_REQUIRED torch_venv TIMEOUT 900 LABELS "e2e;variants" SKIP_RETURN_CODE 77 PROCESSORS 1
                     COST 60)
