# Sourced by the CUDA-toolkit install tests: makes (once, atomically) and names a Debian root with
# the distribution's own CUDA package from non-free, as users get it with `apt install
# nvidia-cuda-toolkit`: cuda_root NAME SUITE PACKAGES... sets ROOT=~/.cache/opforge/roots/NAME
# (OPFORGE_ROOTS overrides the folder). Prints "SKIP: ..." and exits 0 where the root cannot be
# made here (CTest reads that line). The package pulls every CUDA library (about 3 GB installed):
# made once, kept in the cache. CTest makes each root first (tests/install/make_root.sh, roots.*);
# ROOT_RETRY=0 skips at once where it failed before (NAME.failed), as root.sh does.
# Every .deb (debootstrap's and apt's in the root) goes through one cache per suite,
# ~/.cache/opforge/roots/debs/SUITE, which starts with what the host's apt kept of its own suite.
skip() { echo "SKIP: $*"; exit 0; }
cuda_root() {
  local name="$1" suite="$2"
  shift 2
  [ "$(id -u)" -eq 0 ] || skip "chroot and mounts need root"
  local debootstrap
  debootstrap=$(command -v debootstrap || echo /usr/sbin/debootstrap)
  [ -x "$debootstrap" ] || skip "debootstrap is not installed (scripts/deps installs it)"
  command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
  local roots="${OPFORGE_ROOTS:-${XDG_CACHE_HOME:-$HOME/.cache}/opforge/roots}"
  ROOT="$roots/$name"
  local debs="$roots/debs/$suite"
  mkdir -p "$roots" "$debs/partial"
  [ -f "$ROOT/.complete" ] && return 0
  [ "${ROOT_RETRY:-1}" = 0 ] && [ -f "$roots/$name.failed" ] &&
    skip "the $name root could not be made (see $roots/$name.log; ctest -R roots. tries again)"
  (
    flock 9
    [ -f "$ROOT/.complete" ] && exit 0
    # The suite's cache is written by one root at a time.
    exec 8>"$debs.lock"
    flock 8
    local tmp="$ROOT.tmp" log="$roots/$name.log"
    rm -rf "$tmp"
    # The host's own downloads of this suite (scripts/deps), hard-linked where both are on one
    # file system (no copy); debootstrap and apt check each file's hash before they use it.
    if [ "$(. /etc/os-release && echo "${VERSION_CODENAME:-}")" = "$suite" ]; then
      cp -nl /var/cache/apt/archives/*.deb "$debs/" 2>/dev/null || true
    fi
    {
      "$debootstrap" --variant=minbase --components=main,contrib,non-free --cache-dir="$debs" \
        --include=python3,python3-pip,python3-venv,ca-certificates "$suite" "$tmp" http://deb.debian.org/debian &&
        # apt in the root, in a mount namespace of its own (its /proc and the cache bound at its
        # archives go with it); no daemons. Nothing to clean: the .debs stay in the shared cache.
        printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d" && chmod +x "$tmp/usr/sbin/policy-rc.d" &&
        unshare --mount --propagation private -- sh -c '
          root=$0 debs=$1 && shift && mount -t proc proc "$root/proc" &&
          mount --bind "$debs" "$root/var/cache/apt/archives" && chroot "$root" sh -c "
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $*"' \
          "$tmp" "$debs" "$@"
    } >"$log" 2>&1 || {
      tail -5 "$log"
      rm -rf "$tmp"
      touch "$roots/$name.failed"
      exit 3
    }
    # debootstrap left copies of the cache's files in the root's own apt cache (under the mount).
    rm -f "$tmp"/var/cache/apt/archives/*.deb
    touch "$tmp/.complete"
    rm -rf "$ROOT" && mv "$tmp" "$ROOT"
    rm -f "$roots/$name.failed"
  ) 9>"$roots/$name.lock" || skip "could not make the $suite root with $* (see $roots/$name.log)"
}

# torch_in_root ROOT VENV REQUIREMENTS...: a virtual environment inside ROOT (at VENV, a path
# inside) with REQUIREMENTS from PyPI, made once (VENV/.complete holds the list; a longer list
# installs what is new into the same environment); the host's pip cache and CA bundle are bound in.
torch_in_root() {
  local root="$1" venv="$2"
  shift 2
  [ "$(cat "$root$venv/.complete" 2>/dev/null)" = "$*" ] && return 0
  local cache="${PIP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pip}" log="$root.${venv//\//_}.log"
  local failed="$root.${venv//\//_}.failed"
  mkdir -p "$cache"
  [ "${ROOT_RETRY:-1}" = 0 ] && [ -f "$failed" ] &&
    skip "$* could not be installed in $root$venv (see $log; ctest -R roots. tries again)"
  (
    flock 9
    [ "$(cat "$root$venv/.complete" 2>/dev/null)" = "$*" ] && exit 0
    [ -f "$root$venv/.complete" ] || rm -rf "$root$venv"
    rm -f "$root$venv/.complete"
    unshare --mount --propagation private -- bash -s "$root" "$venv" "$cache" "$@" >"$log" 2>&1 <<'INNER' || {
set -e
root="$1" venv="$2" cache="$3"
shift 3
mkdir -p "$root/root/.cache/pip"
mount --bind "$cache" "$root/root/.cache/pip"
mount -t proc proc "$root/proc"
# The host's CA bundle (a proxy's CA may be in it, as on CI runners), for this run only.
certs=/etc/ssl/certs/ca-certificates.crt
[ -f "$certs" ] && [ -f "$root$certs" ] && mount --bind "$certs" "$root$certs"
chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 PIP_CERT=$certs \
  sh -c '[ -x "$0/bin/python" ] || python3 -m venv "$0"; "$0/bin/pip" install -q --progress-bar off "$@"' "$venv" "$@"
INNER
      tail -5 "$log"
      rm -rf "$root$venv"
      touch "$failed"
      exit 3
    }
    echo "$*" >"$root$venv/.complete"
    rm -f "$failed"
  ) 9>"$root.venv.lock" || skip "could not install $* in $root$venv (see $log)"
}
