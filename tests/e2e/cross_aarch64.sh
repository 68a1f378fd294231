#!/usr/bin/env bash
# The default recipe cross-built for aarch64 on this x86-64 machine (--platform aarch64): from two
# copies of the repository in two folders, the same wheel bytes; a linux aarch64 platform tag;
# every library AArch64 code; and the bundled ops computing right when run as aarch64 code under
# emulation (qemu-aarch64-static with Debian's arm64 cross libraries: tests/e2e/cross_check.c).
# Bad input: an unknown platform is exit 2 naming the known ones. SKIP (77) without the cross g++
# or qemu-user-static outside CI (scripts/deps installs both).
set -euo pipefail
opforge=$1 src=$2 work=$3
. "$src/tests/e2e/lib.sh"
rm -rf "$work"; mkdir -p "$work"
for tool in aarch64-linux-gnu-g++ qemu-aarch64-static; do
  command -v "$tool" >/dev/null && continue
  [ "${CI:-}" = "true" ] && fail "$tool is missing: run scripts/deps"
  echo "SKIP: $tool is missing (scripts/deps installs it)"; exit 77
done

out=$("$opforge" plan "$src/recipes/default.toml" --platform sparc 2>&1) && fail "--platform sparc was accepted"
code=$?
[ "$code" = 2 ] || fail "--platform sparc: exit $code, expected 2: $out"
grep -q '"aarch64"' <<<"$out" || fail "--platform sparc does not list the known platforms: $out"
echo "PASS: --platform sparc is exit 2 naming the known platforms"

copy_tree "$src" "$work/a/src"
copy_tree "$src" "$work/second-place/another-src"
# An aarch64 recipe pinned to an x86-64 CPU is bad input (exit 2), naming aarch64's targets.
sed -e 's/^backend = "native"/backend = "native"\nplatform = "arm64"\ncpu_target = "x86-64-v3"/' \
  "$work/a/src/recipes/default.toml" > "$work/a/src/recipes/pinned.toml"
out=$("$opforge" plan "$work/a/src/recipes/pinned.toml" 2>&1) && fail "an aarch64 recipe took cpu_target x86-64-v3"
code=$?
[ "$code" = 2 ] || fail "x86-64 cpu_target for aarch64: exit $code, expected 2: $out"
grep -q 'neoverse-v2' <<<"$out" || fail "the error does not list aarch64's CPU targets: $out"
echo "PASS: an aarch64 recipe with cpu_target x86-64-v3 is exit 2 naming aarch64's targets"
export TORCH_CUDA_ARCH_LIST="9.0"
# One cache for both: the aarch64 CUDA runtime is fetched once (the cache is not part of the bytes).
export OPFORGE_CACHE_DIR="$work/cache"
for side in "a/src" "second-place/another-src"; do
  mkdir -p "$work/$side.tmp"
  TMPDIR="$work/$side.tmp" "$opforge" build "$work/$side/recipes/default.toml" --platform aarch64 \
    --build-dir "$work/$side.build" --dist-dir "$work/$side.dist" > "$work/$side.log" 2>&1 ||
    { cat "$work/$side.log"; fail "cross-build in $side"; }
done
a=$(only_wheel "$work/a/src.dist"); b=$(only_wheel "$work/second-place/another-src.dist")
echo "wheel: $(basename "$a")"
case "$(basename "$a")" in
  *-cp38-abi3-manylinux_2_*_aarch64.whl) ;;
  *) fail "not a manylinux aarch64 wheel: $a" ;;
esac
[ "$(basename "$a")" = "$(basename "$b")" ] || fail "names differ: $a $b"
ha=$(sha256sum "$a" | cut -d' ' -f1); hb=$(sha256sum "$b" | cut -d' ' -f1)
[ "$ha" = "$hb" ] || { cmp -l "$a" "$b" | head; fail "the two aarch64 wheels differ"; }
echo "PASS: identical aarch64 wheels from two folders ($ha)"

mkdir -p "$work/unpacked"
(cd "$work/unpacked" && unzip -q "$a")
libs=$(find "$work/unpacked" -name '*.so')
[ "$(wc -l <<<"$libs")" -ge 5 ] || fail "expected the four op libraries and the hook extension: $libs"
for f in $libs; do
  machine=$(readelf -h "$f" | sed -n 's/^ *Machine: *//p')
  [ "$machine" = "AArch64" ] || fail "$f is $machine code"
done
echo "PASS: every library in the wheel is AArch64 code ($(wc -l <<<"$libs") files)"
# The device code is the same sm_90 cubin an x86-64 build holds: nvcc compiled it.
"$opforge" inspect "$a" > "$work/inspect.txt" || { cat "$work/inspect.txt"; fail "inspect"; }
grep -q "sm_90" "$work/inspect.txt" || { cat "$work/inspect.txt"; fail "inspect does not show sm_90 code"; }
grep -q "aarch64" "$work/inspect.txt" || { cat "$work/inspect.txt"; fail "inspect does not name aarch64"; }
echo "PASS: inspect reads the aarch64 wheel: sm_90 code, aarch64 tag"

# Pinned to the aarch64 baseline: the ISA check reads AArch64 code, and cpu_adam's SVE path (in
# the section of code chosen at run time) does not break armv8-a.
sed -e 's/^backend = "native"/backend = "native"\nplatform = "aarch64"\ncpu_target = "armv8-a"/' \
  "$work/a/src/recipes/default.toml" > "$work/a/src/recipes/baseline.toml"
"$opforge" build "$work/a/src/recipes/baseline.toml" --build-dir "$work/baseline.build" \
  --dist-dir "$work/baseline.dist" > "$work/baseline.log" 2>&1 || { cat "$work/baseline.log"; fail "armv8-a build"; }
w=$(only_wheel "$work/baseline.dist")
"$opforge" inspect --cpu-target armv8-a "$w" > "$work/baseline.txt" || { cat "$work/baseline.txt"; fail "inspect --cpu-target armv8-a"; }
grep -q "cpu code needs: armv8-a" "$work/baseline.txt" || { cat "$work/baseline.txt"; fail "inspect names no armv8-a level"; }
grep -q "dispatched at run time: SVE" "$work/baseline.txt" || { cat "$work/baseline.txt"; fail "cpu_adam's SVE path is not seen"; }
"$opforge" inspect --cpu-target x86-64-v3 "$w" > "$work/wrong.txt" 2>&1 && fail "an x86-64 target passed an aarch64 wheel"
echo "PASS: cpu_target armv8-a holds for the aarch64 wheel (SVE only in dispatched code)"

# One index with both platforms: the same recipe built for this machine into the same dist/, and
# `opforge pick` gives a Grace node (aarch64, H100-class GPU) the aarch64 wheel and an x86-64 H100
# node the x86-64 one, refusing the other by machine.
"$opforge" build "$work/a/src/recipes/default.toml" --build-dir "$work/x86.build" --dist-dir "$work/a/src.dist" \
  > "$work/x86.log" 2>&1 || { cat "$work/x86.log"; fail "the x86-64 build beside the aarch64 wheel"; }
"$opforge" doctor --json > "$work/base.json"
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
for name, machine in (("grace", "aarch64"), ("h100", "x86_64")):
    r = json.load(open(f"{work}/base.json"))
    r["node"].update({"host": name, "glibc": "2.36", "glibcxx": "3.4.30", "cxxabi": "1.3.13", "python": "3.11",
                      "machine": machine, "cpu_level": "x86-64-v3" if machine == "x86_64" else None,
                      "driver": {"version": "580.65.06", "cuda": "13.0"}})
    r["gpus"] = {"reader": "driver API", "devices": [{"index": 0, "name": "NVIDIA GH200", "capability": "9.0"}]}
    json.dump(r, open(f"{work}/{name}.json", "w"))
PY
"$opforge" pick "$work/a/src.dist" --nodes "$work/grace.json" "$work/h100.json" --json > "$work/pick.json" ||
  { cat "$work/pick.json"; fail "pick: a node got no wheel"; }
python3 - "$work/pick.json" <<'PY'
import json, sys
got = {}
for group in json.load(open(sys.argv[1]))["nodes"]:
    for node in group["nodes"]:
        got[node] = group["projects"][0]["wheel"]
assert got["grace"].endswith("_aarch64.whl"), got
assert got["h100"].endswith("_x86_64.whl"), got
print("PASS: pick from one index with both platforms:", got)
PY

lib=$(dirname "$(find "$work/unpacked" -name libopforge_utils.so)")
aarch64-linux-gnu-gcc -O1 -o "$work/cross_check" "$src/tests/e2e/cross_check.c" -ldl -lm
# QEMU's default CPU ("max") has SVE, so cpu_adam takes its SVE path; a Cortex-A72 has NEON only.
for cpu in max cortex-a72; do
  echo "-- emulated CPU: $cpu"
  QEMU_CPU=$cpu qemu-aarch64-static -L /usr/aarch64-linux-gnu "$work/cross_check" "$lib" "$work/aio.bin" ||
    fail "the aarch64 libraries do not compute right under emulation ($cpu)"
done
