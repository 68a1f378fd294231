#!/usr/bin/env bash
# Sourced by the install tests: makes (once, atomically) and names the Debian 11 root they run in,
# ROOT=~/.cache/opforge/roots/bullseye (OPFORGE_ROOTS overrides the folder), and the PyPI ninja
# wheel it installs offline beside opforge's, NINJA_WHEELS. Prints "SKIP: ..." and exits 0 where
# the root cannot be made here (CTest reads that line).
# ROOT_NAME and ROOT_PACKAGES (set before sourcing) name another root and its packages: the
# `--root` tests use "bullseye-dev", which adds python3-dev (the stable-ABI extension's headers)
# and libaio-dev (the aio op).
skip() { echo "SKIP: $*"; exit 0; }
[ "$(id -u)" -eq 0 ] || skip "chroot and mounts need root"
debootstrap=$(command -v debootstrap || echo /usr/sbin/debootstrap)
[ -x "$debootstrap" ] || skip "debootstrap is not installed (scripts/deps installs it)"
command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
roots="${OPFORGE_ROOTS:-${XDG_CACHE_HOME:-$HOME/.cache}/opforge/roots}"
name="${ROOT_NAME:-bullseye}"
packages="${ROOT_PACKAGES:-python3,python3-pip,python3-venv,gcc,g++}"
ROOT="$roots/$name"
mkdir -p "$roots"
if [ ! -f "$ROOT/.complete" ]; then
  # Debian 11 as Debian's mirror has it: glibc 2.31, gcc 10, Python 3.9; about a minute.
  (
    flock 9
    if [ ! -f "$ROOT/.complete" ]; then
      rm -rf "$ROOT.tmp"
      if ! "$debootstrap" --variant=minbase --include="$packages" bullseye "$ROOT.tmp" \
        http://deb.debian.org/debian >"$roots/$name.log" 2>&1; then
        tail -5 "$roots/$name.log"
        rm -rf "$ROOT.tmp"
        exit 3
      fi
      touch "$ROOT.tmp/.complete"
      rm -rf "$ROOT" && mv "$ROOT.tmp" "$ROOT"
    fi
  ) 9>"$roots/$name.lock" || skip "debootstrap could not make a Debian 11 root (see $roots/$name.log)"
fi
NINJA_WHEELS="$roots/wheels"
if ! ls "$NINJA_WHEELS"/ninja-*.whl >/dev/null 2>&1; then
  python3 -m pip download -q ninja --only-binary=:all: --platform manylinux2014_x86_64 --python-version 3.9 \
    -d "$NINJA_WHEELS.tmp" && mv "$NINJA_WHEELS.tmp" "$NINJA_WHEELS" || skip "cannot download the ninja wheel from PyPI"
fi
