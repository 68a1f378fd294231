# The docs' SLURM jobs as printed (docs/ci.md's array and index jobs, docs/cluster.md's build-server
# job), read from the markdown and run on a one-node SLURM cluster on this machine
# (tests/cluster/slurm.sh: slurm-wlm and munge from scripts/deps, as root; slurmctld on port
# 10817, slurmd on 10818) with an sccache-dist scheduler of tests/cluster/sccache_dist.sh on port
# 10692, whose build server (port 10591) the job starts; it shares e2e.sccache_dist's ports lock.
add_test(NAME e2e.slurm
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/slurm.sh $<TARGET_FILE:opforge> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/e2e/slurm ${CMAKE_SOURCE_DIR}/.venv-tools)
set_tests_properties(e2e.slurm PROPERTIES FIXTURES_REQUIRED torch_venv TIMEOUT 900 PROCESSORS 2 COST 120 LABELS "e2e;cluster"
                     SKIP_RETURN_CODE 77 RESOURCE_LOCK "sccache_dist_ports;slurm_ports")
