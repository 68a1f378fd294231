#!/usr/bin/env bash
# [source] sdist end to end: hostile archives and a wrong sha256 are refused by `opforge plan` (exit
# 2, nothing left in the cache); an sdist of tests/fixtures/cuda_extension is planned from its
# unpacked tree; with the torch 2.14 environment, built from an http:// URL served here (python3's
# urllib downloads it once) and built again from the cache without the server.
# usage: sdist.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
opforge=$(realpath "$1") src=$2 work=$(realpath -m "$3")
. "$src/tests/e2e/lib.sh"
rm -rf "$work" && mkdir -p "$work/stage" "$work/dl" "$work/proj"
export OPFORGE_CACHE_DIR="$work/cache"
unset CUDA_HOME CUDA_PATH DS_SKIP_CUDA_CHECK TORCH_CUDA_ARCH_LIST

# The sdist: one folder, tinyscale-0.2.0/, as `python3 setup.py sdist` makes it.
cp -r "$src/tests/fixtures/cuda_extension" "$work/stage/tinyscale-0.2.0"
rm -f "$work/stage/tinyscale-0.2.0/opforge.toml"
tar -czf "$work/dl/tinyscale-0.2.0.tar.gz" -C "$work/stage" tinyscale-0.2.0
sha=$(sha256sum "$work/dl/tinyscale-0.2.0.tar.gz" | cut -c1-64)

recipe() {  # recipe SDIST [SHA256] [PYTHON]
  cat > "$work/proj/opforge.toml" <<TOML
[package]
name = "tinyscale"
version = "0.2.0"
local_version = "cu{cuda_major}{cuda_minor}"

[source]
sdist = "$1"
${2:+sha256 = \"$2\"}

[arch]
list = "9.0"

[cuda]
python = "${3:-python3}"

[build]
backend = "command"
command = ["${3:-python3}", "setup.py", "bdist_wheel"]
TOML
}

# Hostile archives (Python's tarfile writes what it is given): refused, nothing left behind.
python3 - "$work/dl" <<'PY'
import io, sys, tarfile
def make(name, *members):
    with tarfile.open(f"{sys.argv[1]}/{name}.tar.gz", "w:gz") as t:
        for m, data in members:
            t.addfile(m, io.BytesIO(data) if data else None)
def entry(name, type=tarfile.REGTYPE, linkname="", data=b""):
    i = tarfile.TarInfo(name); i.type = type; i.linkname = linkname; i.size = len(data); i.mode = 0o644
    return i, data
make("escape", entry("tinyscale-0.2.0/setup.py", data=b"x"), entry("../../escaped", data=b"x"))
make("symlink", entry("tinyscale-0.2.0/etc", tarfile.SYMTYPE, "/etc"))
make("through", entry("tinyscale-0.2.0/up", tarfile.SYMTYPE, ".."), entry("tinyscale-0.2.0/up/x", data=b"x"))
make("device", entry("tinyscale-0.2.0/null", tarfile.CHRTYPE))
PY
expect_refused() {  # expect_refused ARCHIVE MESSAGE
  recipe "$work/dl/$1.tar.gz"
  local rc=0
  (cd "$work/proj" && "$opforge" plan opforge.toml) > "$work/$1.log" 2>&1 || rc=$?
  [ "$rc" = 2 ] || { cat "$work/$1.log"; fail "$1: exit $rc, not 2"; }
  grep -qxF "opforge: error: $work/dl/$1.tar.gz: member $2" "$work/$1.log" || { cat "$work/$1.log"; fail "$1: message"; }
  [ -z "$(ls -A "$work/cache/sdists" 2>/dev/null | grep -v '^\.')" ] || { ls -la "$work/cache/sdists"; fail "$1: left a cache entry"; }
  [ ! -e "$work/escaped" ] && [ ! -e "$work/dl/escaped" ] || fail "$1: wrote outside the cache"
}
expect_refused escape '"../../escaped": its name has a ".." component'
expect_refused symlink '"tinyscale-0.2.0/etc": a symbolic link to the absolute path "/etc"'
expect_refused through '"tinyscale-0.2.0/up/x": it is under "tinyscale-0.2.0/up", which an earlier member made a symbolic link: it would be written through the link'
expect_refused device '"tinyscale-0.2.0/null": a character device: device files, FIFOs and sockets are not unpacked'

# A wrong sha256: exit 2 naming both digests and the file.
recipe "$work/dl/tinyscale-0.2.0.tar.gz" "$(printf '0%.0s' {1..64})"
rc=0; (cd "$work/proj" && "$opforge" plan opforge.toml) > "$work/mismatch.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || { cat "$work/mismatch.log"; fail "sha256 mismatch: exit $rc"; }
grep -qxF "opforge: error: $work/dl/tinyscale-0.2.0.tar.gz: sha256 is $sha, but [source] sha256 is $(printf '0%.0s' {1..64})" "$work/mismatch.log" \
  || { cat "$work/mismatch.log"; fail "sha256 mismatch: message"; }

# The good sdist: planned from its unpacked tree in the cache.
recipe "../dl/tinyscale-0.2.0.tar.gz" "$sha"
(cd "$work/proj" && "$opforge" plan opforge.toml) > "$work/plan.log" 2>&1 || { cat "$work/plan.log"; fail "plan"; }
root="$work/cache/sdists/tinyscale-0.2.0-${sha:0:16}/tree/tinyscale-0.2.0"
grep -qxF "source        $root" "$work/plan.log" || { cat "$work/plan.log"; fail "plan: the source is not the unpacked tree"; }
[ "$(stat -c %a "$root/setup.py")" = 644 ] || fail "setup.py's mode: $(stat -c %a "$root/setup.py")"
cmp -s "$root/setup.py" "$src/tests/fixtures/cuda_extension/setup.py" || fail "setup.py differs from the fixture's"

venv=${OPFORGE_TORCH214_VENV:-$HOME/.cache/opforge/torch214-venv}
if [ ! -x "$venv/bin/python" ] || [ ! -x /usr/local/cuda-13.0/bin/nvcc ]; then
  msg="the torch 2.14 environment ($venv) or CUDA 13.0 is missing: the build part is left out"
  [ "${CI:-}" = "true" ] && fail "$msg"
  echo "SKIP: $msg"; exit 77
fi
# Built from a URL: a local server, gone before the second build (which uses the cache).
rm -rf "$work/cache/sdists"
python3 -u -m http.server --bind 127.0.0.1 --directory "$work/dl" 0 > "$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -qs "port [0-9]" "$work/server.log" && break; sleep 0.1; done
port=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' "$work/server.log" | head -n 1)
[ -n "$port" ] || { cat "$work/server.log"; fail "the test's http server did not start"; }
url="http://127.0.0.1:$port/tinyscale-0.2.0.tar.gz"
recipe "$url" "$sha" "$venv/bin/python"
sed -i 's/^\[cuda\]/[cuda]\nversion = "torch"/' "$work/proj/opforge.toml"
(cd "$work/proj" && "$opforge" plan opforge.toml) > "$work/plan-url.log" 2>&1 || { cat "$work/plan-url.log"; fail "plan (url)"; }
grep -qF "(not fetched: would fetch $url (sha256 $sha" "$work/plan-url.log" || { cat "$work/plan-url.log"; fail "plan (url) fetched"; }
[ ! -e "$work/cache/sdists" ] || fail "plan downloaded the URL"
(cd "$work/proj" && "$opforge" build opforge.toml) > "$work/build1.log" 2>&1 || { tail -40 "$work/build1.log"; fail "build (url)"; }
grep -q '"GET /tinyscale-0.2.0.tar.gz' "$work/server.log" || { cat "$work/server.log"; fail "the archive was not downloaded"; }
[ -f "$work/cache/sdists/tinyscale-0.2.0-${sha:0:16}/tinyscale-0.2.0.tar.gz" ] || fail "the download is not kept"
wheel=$(only_wheel "$work/proj/dist")
[ -n "$wheel" ] || fail "no wheel"
kill $server; wait $server 2>/dev/null || true
rm -rf "$work/proj/dist"
(cd "$work/proj" && "$opforge" build opforge.toml) > "$work/build2.log" 2>&1 || { tail -40 "$work/build2.log"; fail "build (cached)"; }
[ -n "$(only_wheel "$work/proj/dist")" ] || fail "no wheel from the cached sdist"
mkdir -p "$work/site" && (cd "$work/site" && python3 -m zipfile -e "$(only_wheel "$work/proj/dist")" .)
PYTHONPATH="$work/site" "$venv/bin/python" -c "
import torch, tinyscale
assert torch.equal(tinyscale.scale(torch.arange(4.), 2.0), torch.arange(4.) * 2)
" || fail "the built extension does not import or run"
echo "OK"
