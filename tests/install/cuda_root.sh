# Sourced by the CUDA-toolkit install tests: makes (once, atomically) and names a Debian root with
# the distribution's own CUDA package from non-free, as users get it with `apt install
# nvidia-cuda-toolkit`: cuda_root NAME SUITE PACKAGES... sets ROOT=~/.cache/opforge/roots/NAME
# (OPFORGE_ROOTS overrides the folder). Prints "SKIP: ..." and exits 0 where the root cannot be
# made here (CTest reads that line). The package pulls every CUDA library (about 3 GB installed):
# made once, kept in the cache.
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
  mkdir -p "$roots"
  [ -f "$ROOT/.complete" ] && return 0
  (
    flock 9
    [ -f "$ROOT/.complete" ] && exit 0
    local tmp="$ROOT.tmp" log="$roots/$name.log"
    rm -rf "$tmp"
    {
      "$debootstrap" --variant=minbase --components=main,contrib,non-free \
        --include=python3,python3-pip,python3-venv,ca-certificates "$suite" "$tmp" http://deb.debian.org/debian &&
        # apt in the root, in a mount namespace of its own (its /proc goes with it); no daemons.
        printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d" && chmod +x "$tmp/usr/sbin/policy-rc.d" &&
        unshare --mount --propagation private -- sh -c '
          mount -t proc proc "$0/proc" && chroot "$0" sh -c "
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $* &&
            apt-get clean"' "$tmp" "$@"
    } >"$log" 2>&1 || {
      tail -5 "$log"
      rm -rf "$tmp"
      exit 3
    }
    touch "$tmp/.complete"
    rm -rf "$ROOT" && mv "$tmp" "$ROOT"
  ) 9>"$roots/$name.lock" || skip "could not make the $suite root with $* (see $roots/$name.log)"
}
