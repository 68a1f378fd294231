#!/usr/bin/env bash
# A setup.py torch CUDA extension (tests/fixtures/cuda_extension: one .cpp, one .cu) cross-built for
# aarch64 on this x86-64 machine by `[build] platform = "aarch64"`: setup.py runs with this
# machine's Python and torch, configured as aarch64's, its compilers the aarch64 ones, against
# PyPI's aarch64 torch of the same release (fetched into the cache). From two copies in two
# folders, the same bytes; a manylinux aarch64 tag and the aarch64 extension suffix; AArch64
# code only; sm_90 device code; the torch pin from what it links. install.arm64_extension then
# imports it with the aarch64 torch in the arm64 root under emulation. SKIP (77) without the cross
# compiler, Debian's arm64 Python or the torch environment outside CI (scripts/deps,
# scripts/torch-venv).
set -euo pipefail
opforge=$1 src=$2 work=$3
. "$src/tests/e2e/lib.sh"
rm -rf "$work"; mkdir -p "$work"
venv=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
need_venv "$venv"
for need in /usr/bin/aarch64-linux-gnu-g++ /usr/lib/python3.11/_sysconfigdata__linux_aarch64-linux-gnu.py; do
  [ -e "$need" ] && continue
  [ "${CI:-}" = "true" ] && fail "$need is missing: run scripts/deps"
  echo "SKIP: $need is missing (scripts/deps installs it)"; exit 77
done
unset CUDA_HOME CUDA_PATH TORCH_CUDA_ARCH_LIST MAX_JOBS
# One cache for both folders (the aarch64 torch and CUDA runtime fetched once; not part of the bytes).
export OPFORGE_CACHE_DIR="$work/cache"

recipe() {  # recipe DIR: the fixture's recipe, for aarch64, with the torch environment's Python
  cat > "$1/opforge.toml" <<TOML
[package]
name = "tinyscale"
version = "0.2.0"

[arch]
list = "9.0"

[cuda]
python = "$venv/bin/python"

[build]
backend = "command"
platform = "aarch64"
command = ["$venv/bin/python", "setup.py", "bdist_wheel"]
TOML
}

copy_tree "$src/tests/fixtures/cuda_extension" "$work/a/ext"
copy_tree "$src/tests/fixtures/cuda_extension" "$work/second-place/another-ext"
recipe "$work/a/ext"
# The second folder builds through a [matrix] with a platform axis: a cell for this machine and one
# for aarch64, in one dist/ (both cells use the torch environment instead of making their own).
recipe "$work/second-place/another-ext"
sed -i '/^platform = "aarch64"$/d' "$work/second-place/another-ext/opforge.toml"
cat >> "$work/second-place/another-ext/opforge.toml" <<TOML

[matrix]
torch = ["2.15.0"]
platform = ["x86_64", "aarch64"]

[matrix.environments]
"torch2.15.0-py3.11" = "$venv/bin/python"
"torch2.15.0-py3.11-aarch64" = "$venv/bin/python"
TOML
"$opforge" matrix "$work/second-place/another-ext/opforge.toml" --json > "$work/matrix.json"
python3 - "$work/matrix.json" <<'PY'
import json, sys
cells = [(c["cell"], c["platform"]) for c in json.load(open(sys.argv[1]))["include"]]
assert cells == [("torch2.15.0-py3.11", "x86_64"), ("torch2.15.0-py3.11-aarch64", "aarch64")], cells
print("PASS: [matrix] platform gives a cell per machine:", cells)
PY

"$opforge" plan "$work/a/ext/opforge.toml" > "$work/plan.txt" 2>&1 || { cat "$work/plan.txt"; fail "plan"; }
for want in "_PYTHON_SYSCONFIGDATA_NAME=_sysconfigdata__linux_aarch64-linux-gnu" "_PYTHON_HOST_PLATFORM=linux-aarch64" \
  "cross: torch for aarch64: torch==" "aarch64-linux-gnu-g++"; do
  grep -qF -- "$want" "$work/plan.txt" || { cat "$work/plan.txt"; fail "plan does not say $want"; }
done
echo "PASS: plan shows the cross choices (Python configured as aarch64's, the aarch64 torch, the cross g++)"

for side in a/ext second-place/another-ext; do
  (cd "$work/$side" && "$opforge" build opforge.toml > "$work/$side.log" 2>&1) ||
    { tail -40 "$work/$side.log"; fail "cross-build in $side"; }
done
a=$(only_wheel "$work/a/ext/dist"); b=$(ls "$work"/second-place/another-ext/dist/*_aarch64.whl)
x86=$(ls "$work"/second-place/another-ext/dist/*_x86_64.whl) || fail "the matrix's x86_64 cell wrote no wheel"
echo "PASS: one dist/ with both platforms' wheels: $(basename "$b") $(basename "$x86")"
echo "wheel: $(basename "$a")"
case "$(basename "$a")" in
  tinyscale-0.2.0*-cp311-cp311-manylinux_2_*_aarch64.whl) ;;
  *) fail "not a cp311 manylinux aarch64 wheel: $a" ;;
esac
[ "$(basename "$a")" = "$(basename "$b")" ] || fail "names differ: $a $b"
ha=$(sha256sum "$a" | cut -d' ' -f1); hb=$(sha256sum "$b" | cut -d' ' -f1)
[ "$ha" = "$hb" ] || { cmp -l "$a" "$b" | head; fail "the two aarch64 wheels differ"; }
echo "PASS: identical aarch64 extension wheels from two folders, one built as a matrix cell ($ha)"

mkdir -p "$work/unpacked" && (cd "$work/unpacked" && unzip -q "$a")
so=$(find "$work/unpacked" -name '_C.cpython-311-aarch64-linux-gnu.so')
[ -n "$so" ] || { find "$work/unpacked"; fail "no _C.cpython-311-aarch64-linux-gnu.so in the wheel"; }
machine=$(readelf -h "$so" | sed -n 's/^ *Machine: *//p')
[ "$machine" = "AArch64" ] || fail "$so is $machine code"
# It links the aarch64 torch's libraries and the shared CUDA runtime by name, nothing by path.
needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
for lib in libc10.so libtorch_cpu.so libcudart.so.13; do
  grep -qw "$lib" <<<"$needed" || fail "$so does not need $lib: $needed"
done
echo "PASS: the extension is AArch64 code with the aarch64 extension suffix, needing $needed"
grep -q '^Requires-Dist: torch==2\.15\.\*$' "$work"/unpacked/*.dist-info/METADATA ||
  fail "no torch pin: $(cat "$work"/unpacked/*.dist-info/METADATA)"
"$opforge" inspect "$a" > "$work/inspect.txt" || { cat "$work/inspect.txt"; fail "inspect"; }
grep -q "sm_90" "$work/inspect.txt" && grep -q "aarch64" "$work/inspect.txt" ||
  { cat "$work/inspect.txt"; fail "inspect does not show sm_90 code for aarch64"; }
echo "PASS: torch==2.15.* from what it links; inspect reads sm_90 code in an aarch64 wheel"
# The record names the aarch64 torch wheel it was compiled against, and `verify` rebuilds the same bytes.
python3 - "$a.opforge-record.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["inputs"]["target_torch"]
assert t["requirement"] == "torch==2.15.0", t
assert t["packages"][0]["file"].endswith("_aarch64.whl"), t
print("PASS: the record names", t["packages"][0]["file"])
PY
