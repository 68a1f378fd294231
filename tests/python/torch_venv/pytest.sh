#!/usr/bin/env bash
# Runs one pytest file with the PyPI torch environment of scripts/torch-venv
# ($OPFORGE_TORCH_VENV, default ~/.cache/opforge/torch-venv). Without it: exit 77 (CTest "skipped"),
# or a failure under CI=true, where scripts/test makes it first and its absence is a fault.
set -uo pipefail
venv=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import torch, transformers, pytest" 2>/dev/null; then
  msg="the PyPI torch environment ($venv, with torch, transformers and pytest) is missing: run scripts/torch-venv"
  if [ "${CI:-}" = true ]; then echo "FAIL: $msg" >&2; exit 1; fi
  echo "SKIP: $msg" >&2; exit 77
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider "$@"
