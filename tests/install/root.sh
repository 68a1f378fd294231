#!/usr/bin/env bash
# Sourced by the install tests: makes (once, atomically) and names the Debian 11 root they run in,
# ROOT=~/.cache/opforge/roots/bullseye (OPFORGE_ROOTS overrides the folder), and the PyPI ninja
# wheel it installs offline beside opforge's, NINJA_WHEELS. Prints "SKIP: ..." and exits 0 where
# the root cannot be made here (CTest reads that line).
# ROOT_NAME and ROOT_PACKAGES (set before sourcing) name another root and its packages: the
# `--root` tests use "bullseye-dev", which adds python3-dev (the stable-ABI extension's headers)
# and libaio-dev (the aio op). CTest makes both first (tests/install/make_root.sh, roots.bullseye).
# ROOT_RETRY=0: where this root failed before (NAME.failed), skip at once instead of trying again:
# the tests after the fixture that just tried.
skip() { echo "SKIP: $*"; exit 0; }
[ "$(id -u)" -eq 0 ] || skip "chroot and mounts need root"
debootstrap=$(command -v debootstrap || echo /usr/sbin/debootstrap)
[ -x "$debootstrap" ] || skip "debootstrap is not installed (scripts/deps installs it)"
command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
roots="${OPFORGE_ROOTS:-${XDG_CACHE_HOME:-$HOME/.cache}/opforge/roots}"
name="${ROOT_NAME:-bullseye}"
packages="${ROOT_PACKAGES:-python3,python3-pip,python3-venv,gcc,g++}"
ROOT="$roots/$name"
# One .deb cache per suite, shared by every root of it (bullseye and bullseye-dev download once).
debs="$roots/debs/bullseye"
mkdir -p "$roots" "$debs"
if [ ! -f "$ROOT/.complete" ]; then
  [ "${ROOT_RETRY:-1}" = 0 ] && [ -f "$roots/$name.failed" ] &&
    skip "the $name root could not be made (see $roots/$name.log; ctest -R roots. tries again)"
  # Debian 11 as Debian's mirror has it: glibc 2.31, gcc 10, Python 3.9; about a minute.
  (
    flock 9
    if [ ! -f "$ROOT/.complete" ]; then
      rm -rf "$ROOT.tmp"
      # The suite's cache is written by one debootstrap at a time.
      if ! flock "$debs.lock" "$debootstrap" --variant=minbase --include="$packages" --cache-dir="$debs" \
        bullseye "$ROOT.tmp" http://deb.debian.org/debian >"$roots/$name.log" 2>&1; then
        tail -5 "$roots/$name.log"
        rm -rf "$ROOT.tmp"
        touch "$roots/$name.failed"
        exit 3
      fi
      # debootstrap left copies of the cache's files in the root's own apt cache.
      rm -f "$ROOT.tmp"/var/cache/apt/archives/*.deb
      touch "$ROOT.tmp/.complete"
      rm -rf "$ROOT" && mv "$ROOT.tmp" "$ROOT"
      rm -f "$roots/$name.failed"
    fi
  ) 9>"$roots/$name.lock" || skip "debootstrap could not make a Debian 11 root (see $roots/$name.log)"
fi
NINJA_WHEELS="$roots/wheels"
if ! ls "$NINJA_WHEELS"/ninja-*.whl >/dev/null 2>&1; then
  # Two roots' fixtures may ask at once: each downloads into a folder of its own, the first rename wins.
  ninja_tmp=$(mktemp -d "$NINJA_WHEELS.XXXXXX")
  python3 -m pip download -q ninja --only-binary=:all: --platform manylinux2014_x86_64 --python-version 3.9 \
    -d "$ninja_tmp" && { mv -T "$ninja_tmp" "$NINJA_WHEELS" 2>/dev/null || rm -rf "$ninja_tmp"; } ||
    { rm -rf "$ninja_tmp"; skip "cannot download the ninja wheel from PyPI"; }
fi
