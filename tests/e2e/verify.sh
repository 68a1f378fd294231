#!/usr/bin/env bash
# opforge verify: passes on the untouched wheel and on a rebuild from its record; fails, naming
# the file, after one byte of a .so inside the wheel is changed.
set -euo pipefail
opforge=$1 src=$2 fixture=$3 work=$4
. "$src/tests/e2e/lib.sh"
rm -rf "$work"; mkdir -p "$work"
whl=$(only_wheel "$fixture/dist")
"$opforge" verify "$whl" || fail "untouched wheel does not verify"
TORCH_CUDA_ARCH_LIST="9.0" OPFORGE_CACHE_DIR="$work/cache" "$opforge" verify --allow-run "$whl.opforge-record.json" \
  || fail "rebuild from the record differs"
# Tamper: flip one byte in the middle of libopforge_utils.so and re-zip with the old RECORD.
mkdir "$work/x"; (cd "$work/x" && /usr/bin/python3 -m zipfile -e "$whl" .)
so="$work/x/opforge_ops/_lib/libopforge_utils.so"
/usr/bin/python3 - "$so" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[len(b) // 2] ^= 0xFF; open(p, 'wb').write(b)
PY
tampered="$work/$(basename "$whl")"
(cd "$work/x" && zip -qrX "$tampered" .)
set +e; out=$("$opforge" verify "$tampered" 2>&1); rc=$?; set -e
echo "$out"
[ $rc -ne 0 ] || fail "a tampered wheel verified"
grep -q "opforge_ops/_lib/libopforge_utils.so" <<<"$out" || fail "the message does not name the changed file"
echo "PASS"
