#!/usr/bin/env bash
# The roots of the install tests and what each holds, in one place. Sourced by a test:
# `use_root NAME` makes NAME once (atomically, under its lock) and sets ROOT, and NINJA_WHEELS for
# the Debian 11 ones; "SKIP: ..." and exit 0 where it cannot be made here. Run as
# `make_root.sh NAME...` it makes them: CTest's fixtures roots.* (tests/install.cmake), which do
# the network-bound part (debootstrap, apt, pip) beside the other tests, before the tests that use
# a root. The tests themselves find their root made and only take it.
#   bullseye       Debian 11 as users have it (no python3-dev): install.bullseye
#   bullseye-dev   the same with python3-dev, ninja-build and libaio-dev: install.root_build
#   bookworm-cuda  Debian 12 with Debian's nvidia-cuda-toolkit 11.8: install.bookworm_cuda
#   trixie-cuda    Debian 13 with Debian's CUDA 12.4 and PyPI's torch 2.6.0: install.trixie_cuda
#   bookworm-arm64 Debian 12 for aarch64 (Grace's userland), run under qemu-user-static:
#                  install.arm64_root, install.dist_aarch64
#   bookworm-arm64-torch  the same root (one folder, ROOT is the same) with PyPI's aarch64 torch
#                  2.15.0, numpy and its CUDA 13 libraries in /opt/torch215 (TORCH_PYTHON, its python):
#                  install.arm64_torch. Apart, so that what needs only the root skips the 5 GB.
install_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
use_root() {
  case "$1" in
    bullseye)
      ROOT_NAME=bullseye ROOT_PACKAGES=python3,python3-pip,python3-venv,gcc,g++
      source "$install_dir/root.sh" ;;
    bullseye-dev)
      ROOT_NAME=bullseye-dev ROOT_PACKAGES=python3,python3-pip,python3-venv,python3-dev,gcc,g++,ninja-build,libaio-dev
      source "$install_dir/root.sh" ;;
    bookworm-cuda)
      source "$install_dir/cuda_root.sh"
      cuda_root bookworm-cuda bookworm nvidia-cuda-toolkit g++-11 gcc g++ python3-dev ninja-build ;;
    trixie-cuda)
      source "$install_dir/cuda_root.sh"
      cuda_root trixie-cuda trixie nvidia-cuda-toolkit g++-13 gcc g++ python3-dev python3-venv ninja-build
      # DeepSpeed's own run-time requirements too (its requirements/requirements.txt).
      torch_in_root "$ROOT" /opt/torch26 "torch==2.6.0" "setuptools<80" wheel numpy packaging hjson msgpack psutil \
        py-cpuinfo "pydantic>=2.0.0" einops tqdm nvidia-ml-py ;;
    bookworm-arm64)
      source "$install_dir/arm64_root.sh"
      # libaio1: the aio op of the cross-built wheels opens it (install.arm64_ops); g++,
      # ninja-build, libaio-dev and python3-dev: opforge builds there (install.arm64_native_build).
      arm64_root bookworm-arm64 bookworm python3 python3-venv libaio1 g++ ninja-build libaio-dev python3-dev ;;
    bookworm-arm64-torch)
      use_root bookworm-arm64
      arm64_torch "$ROOT" /opt/torch215 "torch==2.15.0" numpy
      TORCH_PYTHON=/opt/torch215/bin/python ;;
    *) echo "make_root.sh: no root named $1" >&2; exit 2 ;;
  esac
}
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  [ $# -gt 0 ] || { echo "usage: make_root.sh NAME..." >&2; exit 2; }
  for name in "$@"; do
    t0=$(date +%s)
    # A subshell each: a root that cannot be made says SKIP and the next is still tried.
    (use_root "$name" && echo "root $name: $ROOT ($(($(date +%s) - t0)) s)")
  done
fi
