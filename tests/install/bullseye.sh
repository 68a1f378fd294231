#!/usr/bin/env bash
# bullseye.sh DIST_DIR: the platform wheel on Debian 11 (glibc 2.31, gcc 10, Python 3.9), with nothing
# from the repository: pip install it, opforge --version, opforge doctor (finds the toolkit and
# gcc 10), opforge build of a small CPU-only recipe and an import of the wheel it made with
# Debian 11's python3, then the default recipe (the overflow op needs the bound CUDA toolkit).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
wheel=$(ls "$1"/opforge-*.whl)
source "$here/make_root.sh"
use_root bullseye
"$here/in_root.sh" "$ROOT" "$here/bullseye_steps.sh" "$wheel" "$NINJA_WHEELS"/ninja-*.whl
