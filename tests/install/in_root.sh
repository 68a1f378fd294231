#!/usr/bin/env bash
# in_root.sh ROOT SCRIPT FILES...: runs SCRIPT (bash, as root) inside ROOT with nothing of the host
# but the kernel, /dev, a fresh /proc and the CUDA toolkit bound read-only at its own path; FILES
# are copied into /tmp/opforge-test first. A mount namespace of its own: every mount goes with it.
# IN_ROOT_TOOLKIT=0 binds no toolkit: an arm64 root's tests (the host's toolkit is x86-64's).
set -euo pipefail
root="$1" script="$2"
shift 2
exec unshare --mount --propagation private -- bash -s "$root" "$script" "${IN_ROOT_TOOLKIT:-1}" "$@" <<'INNER'
set -euo pipefail
root="$1" script="$2" toolkit="$3"
shift 3
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
cuda=$(readlink -f /usr/local/cuda 2>/dev/null || true)
if [ "$toolkit" != 0 ] && [ -n "$cuda" ] && [ -x "$cuda/bin/nvcc" ]; then
  mkdir -p "$root$cuda"
  mount --bind "$cuda" "$root$cuda"
  mount -o remount,bind,ro "$root$cuda"
  ln -sfn "$cuda" "$root/usr/local/cuda"
fi
work="$root/tmp/opforge-test"
rm -rf "$work" && mkdir -p "$work/in"
[ $# -eq 0 ] || cp "$@" "$work/in/"
cp "$script" "$work/script.sh"
rc=0
chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
  /bin/bash /tmp/opforge-test/script.sh || rc=$?
exit $rc
INNER
