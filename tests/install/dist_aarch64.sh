#!/usr/bin/env bash
# dist_aarch64.sh SOURCE DIST_DIR TOOLS: scripts/dist --platform aarch64 from an empty DIST_DIR
# writes one wheel, opforge-<v>-py3-none-manylinux_2_<N>_aarch64.whl (N ≤ 28), whose executable is
# an AArch64 ELF that needs nothing above GLIBC_2.28 and no libstdc++, and whose tag is the one
# `auditwheel show` (TOOLS/bin/auditwheel, from scripts/deps) finds. Its x86-64 twin (install.dist)
# built the packer already; this builds opforge again with zig for aarch64.
set -euo pipefail
src="$1" dist="$2" tools="$3"
auditwheel="$tools/bin/auditwheel"
[ -x "$auditwheel" ] || { echo "auditwheel missing: run scripts/deps"; exit 1; }
rm -rf "$dist"
start=$(date +%s)
"$src/scripts/dist" --platform aarch64 "$dist"
echo "scripts/dist --platform aarch64: $(($(date +%s) - start)) s"
wheel=$(ls "$dist"/opforge-*.whl)
name=$(basename "$wheel")
echo "wheel: $name ($(stat -c %s "$wheel") bytes)"
[ "$(ls "$dist" | wc -l)" = 1 ] || { echo "DIST_DIR holds more than the wheel: $(ls "$dist")"; exit 1; }
minor=$(echo "$name" | sed -n 's/^opforge-[^-]*-py3-none-manylinux_2_\([0-9]*\)_aarch64\.whl$/\1/p')
[ -n "$minor" ] && [ "$minor" -le 28 ] || { echo "not a manylinux_2_<=28>_aarch64 wheel: $name"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unzip -q "$wheel" -d "$tmp"
exe=$(ls "$tmp"/opforge-*.data/scripts/opforge)
machine=$(readelf -h "$exe" | sed -n 's/^ *Machine: *//p')
echo "executable: $machine, $(stat -c %s "$exe") bytes"
[ "$machine" = AArch64 ] || { echo "the executable is for '$machine', not AArch64"; exit 1; }
interp=$(readelf -l "$exe" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
[ "$interp" = /lib/ld-linux-aarch64.so.1 ] || { echo "its loader is '$interp', not /lib/ld-linux-aarch64.so.1"; exit 1; }
needed=$(readelf -d "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "needs: $needed"
case " $needed" in *" libstdc++"*|*" libgcc_s"*) echo "it needs the system's C++ runtime"; exit 1 ;; esac
newest=$(readelf -V "$exe" | grep -o 'GLIBC_2\.[0-9]*' | sort -t. -k2 -n -u | tail -1)
echo "newest glibc version: $newest"
[ "${newest#GLIBC_2.}" -le 28 ] || { echo "it needs $newest, above the 2.28 floor"; exit 1; }
[ "${newest#GLIBC_2.}" -le "$minor" ] || { echo "its tag says 2.$minor but it needs $newest"; exit 1; }
audit=$("$auditwheel" show "$wheel" 2>&1) || { echo "$audit"; exit 1; }
said=$(echo "$audit" | tr '\n' ' ' | sed -n 's/.*consistent with the following platform tag: *"\([^"]*\)".*/\1/p')
echo "auditwheel show: $said"
[ "$said" = "manylinux_2_${minor}_aarch64" ] || { echo "auditwheel says '$said', the wheel's name manylinux_2_${minor}_aarch64"; exit 1; }
