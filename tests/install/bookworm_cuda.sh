#!/usr/bin/env bash
# bookworm_cuda.sh DIST_DIR: two real CUDA toolkits on one Debian 12 system, as the guides have
# them: Debian's own nvidia-cuda-toolkit 11.8 from non-free (/usr/bin/nvcc a wrapper script,
# cuda.h in /usr/include, libcudart in /usr/lib/x86_64-linux-gnu, /etc/nvcc.profile) and the
# host's NVIDIA 13.0 bound read-only at /usr/local/cuda. opforge's platform wheel, installed in
# the root, lists both, builds the overflow op with 11.8 and gcc 11 (gcc 12 is the default),
# twice from two folders with the same bytes, and again with CUDA_HOME=/usr; the wheel imports.
# The root (~/.cache/opforge/roots/bookworm-cuda, about 6 GB) is made once, by CTest's fixture
# roots.bookworm_cuda (tests/install/make_root.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
wheel=$(ls "$1"/opforge-*.whl)
source "$here/make_root.sh"
use_root bookworm-cuda
start=$(date +%s)
"$here/in_root.sh" "$ROOT" "$here/bookworm_cuda_steps.sh" "$wheel"
echo "steps took $(($(date +%s) - start)) s"
