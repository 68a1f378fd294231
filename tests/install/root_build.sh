#!/usr/bin/env bash
# root_build.sh OPFORGE OUT: `opforge build default --root R` on this machine, R a Debian 11 root
# (glibc 2.31, Python 3.9 with python3-dev; tests/install/make_root.sh makes it once, cached outside
# the repository), writes a cp38-abi3-manylinux_2_31 (or lower) wheel with the overflow hook's
# stable-ABI extension in it; pip installs it in the root, where every op library and the
# extension load; they load on this machine too.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
opforge="$1" out="$2"
source "$here/make_root.sh"
use_root bullseye-dev
rm -rf "$out/dist" && mkdir -p "$out"
cd "$out"
export TORCH_CUDA_ARCH_LIST="9.0" OPFORGE_CACHE_DIR="$out/cache"
start=$(date +%s)
touch "$out/before"
"$opforge" build default --root "$ROOT" | tee build.txt
echo "build inside the root: $(( $(date +%s) - start )) s"
grep -q "^root: $ROOT (Debian GNU/Linux 11 (bullseye)), glibc 2.31" build.txt
whl=$(ls "$out"/dist/*.whl)
case "$(basename "$whl")" in
  *-cp38-abi3-manylinux_2_2[4-8]_x86_64.whl | *-cp38-abi3-manylinux_2_31_x86_64.whl) ;;
  *) echo "FAIL: $(basename "$whl") is not cp38-abi3-manylinux_2_31 or lower"; exit 1 ;;
esac
# (grep on a variable: `unzip -l | grep -q` fails under pipefail once grep stops reading early)
listing=$(unzip -l "$whl")
grep -q "opforge_ops/_lib/_overflow_hooks.abi3.so" <<<"$listing" || { echo "FAIL: no stable-ABI extension"; exit 1; }
# The root itself is unchanged by the build: nothing in it is newer than the build's start.
changed=$(find "$ROOT" -xdev -newer "$out/before" -print -quit)
[ -z "$changed" ] || { echo "FAIL: the build changed $changed in the root"; exit 1; }

cat > "$out/in_root.sh" <<'SH'
set -euo pipefail
cd /tmp/opforge-test
python3 -m venv venv
venv/bin/pip install -q --no-index in/*.whl
venv/bin/python in/load_ops.py
SH
"$here/in_root.sh" "$ROOT" "$out/in_root.sh" "$whl" "$here/load_ops.py" | tee in_root.txt
grep -q "^glibc 2.31 " in_root.txt
rm -rf "$out/site" && /usr/bin/python3 -m zipfile -e "$whl" "$out/site"
PYTHONPATH="$out/site" /usr/bin/python3 "$here/load_ops.py"
echo "root_build: $(basename "$whl") loads in the Debian 11 root and here"

# Without root: bubblewrap in a user namespace, as a user's CI job runs it. The cached root is
# reached through a bind mount in a private mount namespace (its cache folder is root's own).
if command -v bwrap >/dev/null && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  nr="$out/nonroot"
  rm -rf "$nr" && mkdir -p "$nr/root" "$nr/w" "$nr/cache" && chown nobody "$nr/w" "$nr/cache"
  chmod 755 "$out" "$nr"
  unshare --mount --propagation private -- sh -c '
    mount --bind "$1" "$2/root" && cd "$2/w" &&
    setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups env -i PATH=/usr/bin:/bin HOME="$2/w" \
      OPFORGE_CACHE_DIR="$2/cache" TORCH_CUDA_ARCH_LIST=9.0 "$3" build default --root "$2/root"' \
    sh "$ROOT" "$nr" "$opforge" >"$nr/build.txt" 2>&1 || { cat "$nr/build.txt"; echo "FAIL: the build without root"; exit 1; }
  grep -q "^root: $nr/root (Debian GNU/Linux 11 (bullseye)), glibc 2.31.*; through bubblewrap$" "$nr/build.txt" ||
    { cat "$nr/build.txt"; echo "FAIL: not through bubblewrap"; exit 1; }
  ls "$nr"/w/dist/*-cp38-abi3-manylinux_2_31_x86_64.whl >/dev/null ||
    { cat "$nr/build.txt"; echo "FAIL: no cp38-abi3-manylinux_2_31 wheel without root"; exit 1; }
  echo "root_build: the same as the user nobody, through bubblewrap"
fi
