#!/usr/bin/env bash
# The packaging ecosystem's own checkers on one wheel: pip install into a fresh venv + import and
# load every op library, `wheel unpack`, `installer --validate-record all`, check-wheel-contents,
# `twine check --strict`, and `auditwheel show` agreeing with the platform tag opforge chose.
# usage: check_wheel.sh WHEEL_OR_GLOB TOOLS_VENV WORK_DIR
set -euo pipefail
shopt -s nullglob

pattern=$1 tools=$2 work=$3
wheels=( $pattern )
if [ ${#wheels[@]} -ne 1 ]; then
  echo "check_wheel: expected exactly one wheel matching $pattern, found ${#wheels[@]}" >&2
  exit 1
fi
wheel=$(readlink -f "${wheels[0]}")
for tool in python pip wheel check-wheel-contents twine auditwheel; do
  [ -x "$tools/bin/$tool" ] || { echo "check_wheel: $tools/bin/$tool is missing (run scripts/deps)" >&2; exit 1; }
done
rm -rf "$work" && mkdir -p "$work"
name=$(basename "$wheel")
platform=${name%.whl}; platform=${platform##*-}
step() { echo "== $*"; }

step "pip install into a fresh venv"
/usr/bin/python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --no-index --no-deps --disable-pip-version-check "$wheel"
step "import opforge_ops and load every op library"
(cd "$work" && env -u PYTHONPATH -u OPFORGE_OPS_LIB_DIR "$work/venv/bin/python" - <<'PY'
import sys
import opforge_ops
from opforge_ops import _native
assert 'torch' not in sys.modules and 'numpy' not in sys.modules
ops = opforge_ops.available_ops()
assert ops, 'no op library in the installed package'
missing = set(opforge_ops.build_info.get('ops', [])) - set(ops)
assert not missing, f'build_info lists ops without a library: {sorted(missing)}'
for op in ops:
    lib = _native.load(op)
    assert lib._name.startswith(sys.prefix), (lib._name, sys.prefix)
    version = getattr(lib, f'opforge_{op}_abi_version')()
    print(f'  {op}: abi {version} from {lib._name}')
print('  version', opforge_ops.__version__)
PY
)

step "wheel unpack (checks RECORD hashes)"
"$tools/bin/wheel" unpack -d "$work/unpacked" "$wheel" >/dev/null

step "python -m installer --validate-record all"
"$tools/bin/python" -m installer --validate-record all --no-compile-bytecode \
  --destdir "$work/installed" "$wheel"

step "check-wheel-contents"
"$tools/bin/check-wheel-contents" "$wheel"

step "twine check --strict"
"$tools/bin/twine" check --strict "$wheel"

step "auditwheel show agrees with $platform"
"$tools/bin/auditwheel" show --json "$wheel" > "$work/auditwheel.json"
"$tools/bin/python" - "$work/auditwheel.json" "$platform" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
ours = sys.argv[2]
theirs = report.get('overall_tag') or report.get('policy')
if isinstance(theirs, dict):
    theirs = theirs.get('name')
print(f'  auditwheel: {theirs}; opforge: {ours}')
if ours != theirs:
    sys.exit(f'auditwheel says {theirs}, opforge tagged {ours}')
PY
echo "check_wheel: $name passed every checker"
