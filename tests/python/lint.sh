#!/usr/bin/env bash
# python.lint: ruff and mypy on the opforge_ops package, with the configs in src/python
# (ruff.toml, mypy.ini) and the versions scripts/deps pins in the tools venv. Any finding fails.
# usage: lint.sh TOOLS_VENV SRC_PYTHON CACHE_DIR
set -uo pipefail
tools=$1 src=$2 cache=$3
for t in ruff mypy; do
  if [ ! -x "$tools/bin/$t" ]; then
    echo "lint: $tools/bin/$t is missing; run ./scripts/deps (it installs the pinned ruff and mypy)" >&2
    exit 1
  fi
done
cd "$src" || exit 1
rc=0
"$tools/bin/ruff" check --no-cache . || rc=1
"$tools/bin/mypy" --cache-dir "$cache/mypy" || rc=1
exit $rc
