#!/usr/bin/env bash
# binfmt.sh [MACHINE]: lets this x86-64 machine run MACHINE's programs (aarch64 unless told) through
# qemu-user-static, as the arm64 root needs: its maker's debootstrap runs the root's own dpkg, and
# the tests run its python3 and opforge. The kernel does it (binfmt_misc: a registered ELF header
# → qemu-MACHINE-static), so a chroot needs no copy of qemu inside: Debian registers the emulator
# with the F flag (opened once, at registration), which also makes it reach into every root.
# Idempotent: mounts binfmt_misc only where it is not mounted (these machines do not mount it at
# boot) and enables the emulator only where it is not enabled. Prints "SKIP: ..." and exits 0
# where it cannot (not root, qemu-user-static missing, a container that may not mount it): the
# convention of the roots (CTest reads that line). Prints nothing and exits 0 when ready.
set -euo pipefail
machine="${1:-aarch64}"
skip() { echo "SKIP: $*"; exit 0; }
emulator="/usr/bin/qemu-$machine-static"
entry="/usr/share/binfmts/qemu-$machine"
misc=/proc/sys/fs/binfmt_misc
ready() { [ "$(head -1 "$misc/qemu-$machine" 2>/dev/null)" = enabled ]; }
ready && exit 0
[ "$(id -u)" -eq 0 ] || skip "running $machine programs needs binfmt_misc set up by root (qemu-$machine is not enabled)"
[ -x "$emulator" ] && [ -f "$entry" ] ||
  skip "$emulator or its binfmt entry is missing (apt-get install qemu-user-static binfmt-support; scripts/deps installs them)"
update_binfmts=$(command -v update-binfmts || echo /usr/sbin/update-binfmts)
[ -x "$update_binfmts" ] || skip "update-binfmts is not installed (apt-get install binfmt-support)"
# Two makers may get here at once: the second waits, then finds it done.
exec 9>/run/opforge-binfmt.lock
flock 9
ready && exit 0
if [ ! -f "$misc/register" ]; then
  mount -t binfmt_misc binfmt_misc "$misc" 2>/dev/null ||
    skip "cannot mount binfmt_misc at $misc (a container without that right?)"
fi
# binfmt-support keeps its own state; --enable writes the kernel's entry from it (the package's
# entry is imported when the package is installed, and again here where it was not).
"$update_binfmts" --enable "qemu-$machine" >/dev/null 2>&1 ||
  { "$update_binfmts" --import "qemu-$machine" >/dev/null 2>&1 && "$update_binfmts" --enable "qemu-$machine" >/dev/null 2>&1; } ||
  true
ready || skip "update-binfmts could not enable qemu-$machine (see update-binfmts --display qemu-$machine)"
