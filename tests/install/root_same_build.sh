#!/usr/bin/env bash
# root_same_build.sh OPFORGE OUT: a build inside a root is the same build. A setuptools project
# whose C extension embeds MARK from CFLAGS is built by a command recipe here and with --root in
# the Debian 11 root (tests/install/make_root.sh's bullseye-dev): both libraries say MARK=red, and
# the two records hold the same environment; a CFLAGS naming a folder the root lacks is refused by
# name (exit 2); `verify --allow-run` rebuilds the root's record in the root (identical bytes), and
# says what to pass, exit 2, when the root it names is gone or is another system.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
opforge="$1" out="$2"
source "$here/make_root.sh"
use_root bullseye-dev
rm -rf "$out" && mkdir -p "$out/p"
export OPFORGE_CACHE_DIR="$out/cache"
unset CUDA_HOME CUDA_PATH
cd "$out/p"
cat > setup.py <<'PY'
from setuptools import Extension, setup
setup(name="mark", version="1.0", ext_modules=[Extension("mark", ["mark.c"])])
PY
cat > mark.c <<'C'
#include <Python.h>
#ifndef MARK
#define MARK none
#endif
#define TEXT(x) #x
#define STRING(x) TEXT(x)
static PyObject* get(PyObject* self, PyObject* args) { return PyUnicode_FromString("MARK=" STRING(MARK)); }
static PyMethodDef methods[] = {{"get", get, METH_NOARGS, ""}, {0}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "mark", 0, -1, methods};
PyMODINIT_FUNC PyInit_mark(void) { return PyModule_Create(&module); }
C
cat > recipe.toml <<'T'
[package]
name = "mark"
version = "1.0"
local_version = "none"
[source]
path = "."
[cuda]
python = "/usr/bin/python3"
[build]
backend = "command"
command = ["/usr/bin/python3", "setup.py", "-q", "bdist_wheel"]
T
mark_of() {  # the MARK the wheel's library carries
  rm -rf "$out/x" && /usr/bin/python3 -m zipfile -e "$1" "$out/x"
  grep -ao 'MARK=[a-z]*' "$out"/x/mark*.so | head -n 1
}
CFLAGS=-DMARK=red "$opforge" build recipe.toml --build-dir "$out/host/build" --dist-dir "$out/host/dist" >"$out/host.txt" 2>&1 ||
  { cat "$out/host.txt"; echo "FAIL: the build here"; exit 1; }
CFLAGS=-DMARK=red "$opforge" build recipe.toml --root "$ROOT" --build-dir "$out/root/build" --dist-dir "$out/root/dist" \
  >"$out/root.txt" 2>&1 || { cat "$out/root.txt"; echo "FAIL: the build in the root"; exit 1; }
host_whl=$(ls "$out"/host/dist/*.whl) root_whl=$(ls "$out"/root/dist/*.whl)
[ "$(mark_of "$host_whl")" = MARK=red ] || { echo "FAIL: here: $(mark_of "$host_whl")"; exit 1; }
[ "$(mark_of "$root_whl")" = MARK=red ] || { echo "FAIL: in the root: $(mark_of "$root_whl") (CFLAGS lost)"; exit 1; }
echo "root_same_build: CFLAGS reach the build inside the root (MARK=red both ways)"
# The records: the same recorded environment; the root's names its root.
/usr/bin/python3 - "$out"/host/dist/*.opforge-record.json "$out"/root/dist/*.opforge-record.json "$ROOT" <<'PY'
import json, sys
host, root = (json.load(open(p))["inputs"] for p in sys.argv[1:3])
assert host["environment"] == root["environment"] == {"CFLAGS": "-DMARK=red"}, (host["environment"], root["environment"])
assert "root" not in host, host.get("root")
assert root["root"]["path"] == sys.argv[3] and root["root"]["glibc"] == "2.31", root["root"]
assert root["root"]["os"] == "Debian GNU/Linux 11 (bullseye)", root["root"]
for key in ("recipe", "arch_list", "source_date_epoch", "command", "build_env"):
    assert host.get(key, {}).get("sha256") == root.get(key, {}).get("sha256") if key == "recipe" else host.get(key) == root.get(key), key
print("root_same_build: the records hold the same inputs; the root's names", root["root"]["os"])
PY
# A variable that changes the wheel but names a folder the root lacks: refused by name.
set +e
CFLAGS="-DMARK=red -I/opt/opforge-nowhere/include" "$opforge" build recipe.toml --root "$ROOT" \
  --build-dir "$out/bad/build" --dist-dir "$out/bad/dist" >"$out/bad.txt" 2>&1
code=$?
set -e
[ "$code" = 2 ] && grep -q "CFLAGS names /opt/opforge-nowhere/include" "$out/bad.txt" ||
  { cat "$out/bad.txt"; echo "FAIL: exit $code, not a refusal naming CFLAGS"; exit 1; }
[ ! -e "$out/bad/dist" ] || [ -z "$(ls -A "$out/bad/dist")" ] || { echo "FAIL: the refused build wrote a wheel"; exit 1; }
echo "root_same_build: a CFLAGS naming a folder the root lacks is refused by name (exit 2)"
# verify: rebuilt in the root, identical.
record=$(ls "$out"/root/dist/*.opforge-record.json)
"$opforge" verify "$record" --allow-run >"$out/verify.txt" 2>&1 || { cat "$out/verify.txt"; echo "FAIL: verify in the root"; exit 1; }
grep -q "^  root    $ROOT (Debian GNU/Linux 11 (bullseye), glibc 2.31, as in the record)" "$out/verify.txt" &&
  grep -q ": ok (the rebuild gave identical bytes" "$out/verify.txt" || { cat "$out/verify.txt"; echo "FAIL: verify"; exit 1; }
echo "root_same_build: verify --allow-run rebuilt the record in its root, identical"
# The root gone (the record edited to name a folder that is not there), or another system.
/usr/bin/python3 - "$record" "$out/gone.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); r["inputs"]["root"]["path"] = "/nonexistent/opforge-root"
json.dump(r, open(sys.argv[2], "w"))
PY
for case in gone other; do
  set +e
  if [ $case = gone ]; then "$opforge" verify "$out/gone.json" --allow-run >"$out/$case.txt" 2>&1
  else "$opforge" verify "$record" --allow-run --root / >"$out/$case.txt" 2>&1; fi
  code=$?
  set -e
  want="the record was built inside the root /nonexistent/opforge-root"
  [ $case = other ] && want="is not the one the record was built in: os: Debian GNU/Linux 11 (bullseye) in the record"
  [ "$code" = 2 ] && grep -qF "$want" "$out/$case.txt" || { cat "$out/$case.txt"; echo "FAIL: $case: exit $code"; exit 1; }
done
echo "root_same_build: a gone or different root is exit 2, naming what to pass"
