# Sourced by the aarch64 tests: makes (once, atomically) and names a Debian arm64 root on this
# x86-64 machine, the Grace nodes' userland (GH200, GB200) to run aarch64 wheels and opforge in:
# arm64_root NAME SUITE PACKAGES... sets ROOT=~/.cache/opforge/roots/NAME (OPFORGE_ROOTS
# overrides the folder). Its programs run under qemu-user-static through binfmt_misc
# (tests/install/binfmt.sh sets that up, here and before each use). Prints "SKIP: ..." and exits 0
# where the root cannot be made or run here (CTest reads that line); ROOT_RETRY=0 skips at once
# where it failed before (NAME.failed), as root.sh does. CTest makes it first
# (tests/install/make_root.sh, roots.bookworm_arm64).
#
# arm64_torch ROOT VENV REQUIREMENTS... puts aarch64 wheels from PyPI into a virtual environment
# at VENV inside ROOT, made once (VENV/.complete holds the list). The host's pip downloads and
# unpacks them (--platform, --target): natively, not the root's pip under emulation.
skip() { echo "SKIP: $*"; exit 0; }
arm64_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# Emulation is the kernel's state, not the root's: a reboot (or another machine with the cache)
# loses it, so every user of the root asks again (nothing to do where it is set up).
arm64_emulation() {
  local said
  said=$("$arm64_here/binfmt.sh" aarch64) || skip "tests/install/binfmt.sh failed"
  case "$said" in SKIP:*) echo "$said"; exit 0 ;; esac
}

arm64_root() {
  local name="$1" suite="$2"
  shift 2
  [ "$(id -u)" -eq 0 ] || skip "chroot and mounts need root"
  local debootstrap
  debootstrap=$(command -v debootstrap || echo /usr/sbin/debootstrap)
  [ -x "$debootstrap" ] || skip "debootstrap is not installed (scripts/deps installs it)"
  command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
  arm64_emulation
  local roots="${OPFORGE_ROOTS:-${XDG_CACHE_HOME:-$HOME/.cache}/opforge/roots}"
  ROOT="$roots/$name"
  # arm64's .debs have names and contents of their own: a cache apart from the amd64 roots' (whose
  # lock the CUDA roots hold for minutes).
  local debs="$roots/debs/$suite-arm64"
  mkdir -p "$roots" "$debs"
  local include
  include=$(IFS=,; echo "$*")
  # .complete holds the package list the root was made with: a root made before a package was
  # added gets the missing ones installed in place (the torch environment in it stays).
  if [ -f "$ROOT/.complete" ]; then
    [ "$(cat "$ROOT/.complete")" = "$include" ] && return 0
    (
      flock 9
      [ "$(cat "$ROOT/.complete")" = "$include" ] && exit 0
      cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
      chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
        sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends $*" >>"$roots/$name.log" 2>&1 ||
        exit 3
      rm -f "$ROOT"/var/cache/apt/archives/*.deb
      echo "$include" > "$ROOT/.complete"
    ) 9>"$roots/$name.lock" || skip "could not add $* to the arm64 root (see $roots/$name.log)"
    return 0
  fi
  [ "${ROOT_RETRY:-1}" = 0 ] && [ -f "$roots/$name.failed" ] &&
    skip "the $name root could not be made (see $roots/$name.log; ctest -R roots. tries again)"
  (
    flock 9
    [ -f "$ROOT/.complete" ] && exit 0
    exec 8>"$debs.lock"
    flock 8
    local tmp="$ROOT.tmp" log="$roots/$name.log"
    rm -rf "$tmp"
    # A foreign --arch: debootstrap unpacks natively, then runs its second stage (the root's own
    # dpkg and maintainer scripts) in the root under emulation, most of the few minutes this takes.
    "$debootstrap" --arch=arm64 --variant=minbase --cache-dir="$debs" --include="$include" \
      "$suite" "$tmp" http://deb.debian.org/debian >"$log" 2>&1 || {
      tail -5 "$log"
      rm -rf "$tmp"
      touch "$roots/$name.failed"
      exit 3
    }
    # It is a root of this machine only if its python3 runs here and says so.
    local machine
    machine=$(chroot "$tmp" /usr/bin/python3 -c 'import platform; print(platform.machine())' 2>>"$log") &&
      [ "$machine" = aarch64 ] || {
      echo "the root's python3 says '${machine:-nothing}', not aarch64" | tee -a "$log"
      rm -rf "$tmp"
      touch "$roots/$name.failed"
      exit 3
    }
    rm -f "$tmp"/var/cache/apt/archives/*.deb
    echo "$include" > "$tmp/.complete"
    rm -rf "$ROOT" && mv "$tmp" "$ROOT"
    rm -f "$roots/$name.failed"
  ) 9>"$roots/$name.lock" || skip "could not make the arm64 $suite root with $* (see $roots/$name.log)"
}

arm64_torch() {
  local root="$1" venv="$2"
  shift 2
  [ "$(cat "$root$venv/.complete" 2>/dev/null)" = "$*" ] && return 0
  local log="$root.${venv//\//_}.log" failed="$root.${venv//\//_}.failed"
  [ "${ROOT_RETRY:-1}" = 0 ] && [ -f "$failed" ] &&
    skip "$* could not be installed in $root$venv (see $log; ctest -R roots. tries again)"
  python3 -m pip --version >/dev/null 2>&1 || skip "the host's python3 has no pip (apt-get install python3-pip)"
  (
    flock 9
    [ "$(cat "$root$venv/.complete" 2>/dev/null)" = "$*" ] && exit 0
    # Partly made (a killed run): made again. .complete, written last, is what says it is made.
    rm -rf "$root$venv"
    {
      set -e
      # The environment itself by the root's python3 (its paths, its pyvenv.cfg), without pip:
      # ensurepip under emulation takes a minute and nothing here needs pip inside.
      chroot "$root" /usr/bin/python3 -m venv --without-pip "$venv"
      local site
      site=$(cd "$root$venv/lib" && echo python3.*/site-packages)
      local pyver=${site%%/*}
      pyver=${pyver#python}
      # pip takes --platform literally, no older tag implied: every manylinux_2_N an aarch64 wheel
      # of the root's glibc may carry (torch's nvidia-* wheels say 2_17, 2_18, 2_25, 2_27, 2_28).
      local glibc_minor platforms=(--platform manylinux2014_aarch64) m
      glibc_minor=$(chroot "$root" /usr/bin/python3 -c 'import platform; print(platform.libc_ver()[1].split(".")[1])')
      for m in $(seq "$glibc_minor" -1 17); do platforms+=(--platform "manylinux_2_${m}_aarch64"); done
      # PyPI's torch for aarch64 brings CUDA (nvidia-* wheels); `import torch` loads those
      # libraries even with no GPU, so they are installed too (most of the size and the time).
      python3 -m pip install -q --progress-bar off --no-compile --only-binary=:all: "${platforms[@]}" \
        --python-version "$pyver" --implementation cp --target "$root$venv/lib/$site" "$@"
    } >"$log" 2>&1 || {
      tail -5 "$log"
      rm -rf "$root$venv"
      touch "$failed"
      exit 3
    }
    echo "$*" >"$root$venv/.complete"
    rm -f "$failed"
  ) 9>"$root.venv.lock" || skip "could not install $* in $root$venv (see $log)"
}
