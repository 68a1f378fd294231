#!/usr/bin/env bash
# opforge's own cpu_adam holds AVX-512 and AVX2 code on purpose (one file per SIMD level, chosen at
# run time): `inspect` reports it as dispatched in the default wheel (baseline x86-64, and
# --cpu-target x86-64-v3 passes), and a cpu_target = "x86-64-v3" build still
# passes because op.toml's per-file ISA flags allow exactly those families in that library, and
# gives the same cpu_adam bytes (its flags never say -march=native).
# usage: cpu_target_own_ops.sh OPFORGE_BINARY SOURCE_DIR DEFAULT_WHEEL_DIR WORK_DIR
set -euo pipefail
OPFORGE=$(realpath "$1") SRC=$(realpath "$2") DEFAULT=$3 WORK=$4
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$WORK"; mkdir -p "$WORK"; WORK=$(realpath "$WORK")
export OPFORGE_CACHE_DIR=$WORK/cache

whl=$(ls "$DEFAULT"/dist/*.whl | head -n 1)
"$OPFORGE" inspect --json "$whl" > "$WORK/default.json"
"$PY" - "$WORK/default.json" <<'PY' || fail "default wheel: cpu_adam's AVX-512 is not reported"
import json, sys
j = json.load(open(sys.argv[1]))
lib = [f for f in j["files"] if f["path"].endswith("libopforge_cpu_adam.so")][0]
fams = {f["family"]: f for f in lib["elf"]["isa"]["dispatched"]}
print("default wheel cpu_adam:", lib["elf"]["isa"]["summary"], sorted(fams))
# The AVX2 and AVX-512 kernels run only after the CPU check (OPFORGE_DISPATCHED): dispatched, and
# the wheel's baseline is what every x86-64 CPU runs.
assert j["cpu_level"] in ("x86-64", "x86-64-v2"), j["cpu_level"]
assert lib["elf"]["isa"]["level"] in ("x86-64", "x86-64-v2"), lib["elf"]["isa"]["level"]
assert fams["AVX-512F"]["count"] > 0 and fams["AVX2"]["count"] > 0, fams
assert "AVX2" in j["cpu_dispatched"] and "AVX-512F" in j["cpu_dispatched"], j["cpu_dispatched"]
PY
"$OPFORGE" inspect "$whl" > "$WORK/default.txt"
grep -q 'dispatched at run time: .*AVX-512F' "$WORK/default.txt" || fail "inspect's text does not show the dispatched code"
"$OPFORGE" inspect "$whl" --cpu-target x86-64-v3 > /dev/null || fail "the default wheel fails --cpu-target x86-64-v3"

cat > "$WORK/recipe.toml" <<TOML
[package]
name = "opforge-ops"
version = "0.1.0"
local_version = "none"

[source]
path = "$SRC"
ops_dir = "src/kernels"

[build]
build_dir = "build"
dist_dir = "dist"
cpu_target = "x86-64-v3"
TOML
for v in $(env | grep -o '^DS_BUILD_[A-Z0-9_]*' || true); do unset "$v"; done
DS_BUILD_CPU_ADAM=1 "$OPFORGE" build "$WORK/recipe.toml" > "$WORK/build.log" 2>&1 \
  || { tail -30 "$WORK/build.log" >&2; fail "cpu_adam with cpu_target = x86-64-v3 did not build"; }
# The wrappers change nothing for sources that never ask for -march=native: same library bytes.
lib=opforge_ops/_lib/libopforge_cpu_adam.so
a=$(unzip -p "$whl" "$lib" | sha256sum) b=$(unzip -p "$WORK"/dist/*.whl "$lib" | sha256sum)
[ "$a" = "$b" ] || fail "cpu_adam differs between the default wheel and the cpu_target build"
echo "cpu_target_own_ops: ok"
