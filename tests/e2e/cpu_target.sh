#!/usr/bin/env bash
# [build] cpu_target end to end, through the real binary, on a setuptools project that compiles
# the DeepSpeed way: `-march=native` hard-coded (cpu_arch()) and a SIMD macro taken from the build
# machine's /proc/cpuinfo (simd_width()). DEMO_SIMD plays an AVX-512 build machine on any machine.
#   v3 target, build machine "AVX-512" → builds, inspect says ≤ x86-64-v3 (with FMA: the 256-bit path)
#   v4 target                           → AVX-512F in the wheel, whatever this machine has
#   no target                           → AVX-512 in the wheel (AVX-512 machine) or no build at all
#   -mavx512f in the project's flags    → exit 1 naming the file and AVX-512F; cpu_dispatch allows it
#   unknown cpu_target                  → exit 2 with file:line:col and the accepted values
# usage: cpu_target.sh OPFORGE_BINARY WORK_DIR
set -euo pipefail
OPFORGE=$(realpath "$1")
WORK=$2
PY=/usr/bin/python3
rm -rf "$WORK"; mkdir -p "$WORK"; WORK=$(realpath "$WORK")
export OPFORGE_CACHE_DIR=$WORK/cache
fail() { echo "FAIL: $*" >&2; exit 1; }
"$PY" -c 'import setuptools, wheel' 2>/dev/null || fail "/usr/bin/python3 lacks setuptools or wheel (scripts/deps)"
has_avx512=0; grep -qw avx512f /proc/cpuinfo && has_avx512=1
echo "this machine has AVX-512F: $has_avx512"

P=$WORK/project
mkdir -p "$P/simd_demo" "$P/ops"
touch "$P/simd_demo/__init__.py"
cat > "$P/setup.py" <<'PY'
import os
from setuptools import Extension, setup

def simd_width():  # DeepSpeed's op_builder reads the build machine's CPU flags the same way
    if os.environ.get("DEMO_SIMD"):
        return os.environ["DEMO_SIMD"]
    flags = open("/proc/cpuinfo").read()
    return "-D__AVX512__" if " avx512f" in flags else "-D__AVX256__" if " avx2" in flags else "-D__SCALAR__"

extra = ["-O3", "-march=native", simd_width()] + os.environ.get("DEMO_EXTRA", "").split()
setup(name="simd-demo", version="1.0.0", packages=["simd_demo"],
      ext_modules=[Extension("simd_demo._k", ["k.c"], extra_compile_args=extra)])
PY
cat > "$P/k.c" <<'C'
#include <Python.h>
#include <immintrin.h>
void demo_scale(float* x, long n, float k) {
  long i = 0;
#if defined(__AVX512__)
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), _mm512_set1_ps(k)));
#elif defined(__AVX256__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_set1_ps(k), _mm256_setzero_ps()));
#endif
  for (; i < n; ++i) x[i] *= k;
}
#ifdef FORCE512
void demo_force512(float* x) { _mm512_storeu_ps(x, _mm512_add_ps(_mm512_loadu_ps(x), _mm512_set1_ps(1))); }
#endif
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_k", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__k(void) { return PyModule_Create(&mod); }
C

# recipe NAME [TOML lines for [build]...]: writes $WORK/NAME/recipe.toml
recipe() {
  local name=$1; shift
  mkdir -p "$WORK/$name"
  {
    printf '[package]\nname = "simd-demo"\nversion = "1.0.0"\nlocal_version = "none"\n\n'
    printf '[source]\npath = "%s"\nops_dir = "ops"\n\n' "$P"
    printf '[build]\nbackend = "command"\ncommand = ["%s", "setup.py", "-q", "bdist_wheel"]\n' "$PY"
    printf 'build_dir = "build"\ndist_dir = "dist"\n'
    for line in "$@"; do printf '%s\n' "$line"; done
  } > "$WORK/$name/recipe.toml"
}
clean_project() { rm -rf "$P/build" "$P/dist" "$P"/*.egg-info; }
# level NAME: the cpu level inspect reports for the extension in NAME's wheel
level() {
  "$OPFORGE" inspect --json "$WORK/$1"/dist/*.whl > "$WORK/$1/inspect.json"
  "$PY" - "$WORK/$1/inspect.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
ext = [f for f in j["files"] if f["path"].startswith("simd_demo/_k") and f.get("elf")]
assert len(ext) == 1, [f["path"] for f in j["files"]]
isa = ext[0]["elf"]["isa"]
print(isa["level"], " ".join(f["family"] for f in isa["families"]))
PY
}

# 1. v3 target on a build machine that says AVX-512: the wheel runs on every x86-64-v3 CPU.
clean_project
recipe v3 'cpu_target = "x86-64-v3"'
DEMO_SIMD=-D__AVX512__ "$OPFORGE" build "$WORK/v3/recipe.toml" > "$WORK/v3/build.log" 2>&1 \
  || { tail -30 "$WORK/v3/build.log" >&2; fail "v3 build exited non-zero"; }
got=$(level v3); echo "v3 target: $got"
case "$got" in "x86-64-v3 "*FMA*) ;; *) fail "v3 target: expected x86-64-v3 with FMA, got '$got'";; esac
case "$got" in *AVX-512*) fail "v3 target: AVX-512 in the wheel: $got";; esac
"$OPFORGE" inspect --cpu-target x86-64-v3 "$WORK"/v3/dist/*.whl > /dev/null || fail "inspect --cpu-target x86-64-v3 refused the v3 wheel"
grep -q '"cpu_target": "x86-64-v3"' "$WORK"/v3/dist/*.opforge-record.json || fail "the build record lacks cpu_target"

# 2. v4 target: AVX-512 is compiled whatever this machine has (the wrapper, not the machine, decides).
clean_project
recipe v4 'cpu_target = "x86-64-v4"'
DEMO_SIMD=-D__AVX512__ "$OPFORGE" build "$WORK/v4/recipe.toml" > "$WORK/v4/build.log" 2>&1 \
  || { tail -30 "$WORK/v4/build.log" >&2; fail "v4 build exited non-zero"; }
got=$(level v4); echo "v4 target: $got"
case "$got" in "x86-64-v4 "*AVX-512F*) ;; *) fail "v4 target: expected x86-64-v4 with AVX-512F, got '$got'";; esac

# 3. No target: the project's -march=native stands.
clean_project
recipe native
if DEMO_SIMD=-D__AVX512__ "$OPFORGE" build "$WORK/native/recipe.toml" > "$WORK/native/build.log" 2>&1; then
  [ $has_avx512 = 1 ] || fail "without AVX-512 here, -march=native with AVX-512 intrinsics should not compile"
  got=$(level native); echo "no target: $got"
  case "$got" in "x86-64-v4 "*AVX-512F*) ;; *) fail "no target on an AVX-512 machine: expected AVX-512F, got '$got'";; esac
  if "$OPFORGE" inspect --cpu-target x86-64-v3 "$WORK"/native/dist/*.whl > /dev/null 2> "$WORK/native/check.err"; then
    fail "inspect --cpu-target x86-64-v3 accepted AVX-512 code"
  fi
  grep -q 'simd_demo/_k.*AVX-512F' "$WORK/native/check.err" || fail "inspect's refusal does not name the file and AVX-512F"
else
  [ $has_avx512 = 0 ] || { tail -30 "$WORK/native/build.log" >&2; fail "no-target build failed on an AVX-512 machine"; }
  echo "no target: the build fails here (no AVX-512 on this machine), as DeepSpeed's would"
fi

# 4. Code above the target by other means than -march=native fails the build, naming the file.
clean_project
recipe leak 'cpu_target = "x86-64-v3"'
set +e
DEMO_EXTRA="-mavx512f -DFORCE512" "$OPFORGE" build "$WORK/leak/recipe.toml" > "$WORK/leak/build.log" 2>&1
rc=$?
set -e
[ $rc = 1 ] || { cat "$WORK/leak/build.log" >&2; fail "leak: expected exit 1, got $rc"; }
grep -q 'above cpu_target "x86-64-v3"' "$WORK/leak/build.log" || fail "leak: message does not name the target"
grep -q 'simd_demo/_k[^ ]*\.so: AVX-512F ([0-9]*, first v[a-z0-9]* at 0x[0-9a-f]* in demo_force512)' "$WORK/leak/build.log" \
  || { cat "$WORK/leak/build.log" >&2; fail "leak: message does not name the file, family and function"; }
ls "$WORK"/leak/dist/*.whl > /dev/null 2>&1 && fail "leak: a refused wheel was left in dist/"
clean_project
recipe dispatch 'cpu_target = "x86-64-v3"' 'cpu_dispatch = ["simd_demo/_k*.so"]'
DEMO_EXTRA="-mavx512f -DFORCE512" "$OPFORGE" build "$WORK/dispatch/recipe.toml" > "$WORK/dispatch/build.log" 2>&1 \
  || { tail -30 "$WORK/dispatch/build.log" >&2; fail "cpu_dispatch did not allow the file"; }

# 5. Bad input: exit 2, file:line:col and the accepted values.
recipe bad 'cpu_target = "x86-64-v5"'
set +e
"$OPFORGE" plan "$WORK/bad/recipe.toml" > "$WORK/bad/out.log" 2>&1
rc=$?
set -e
[ $rc = 2 ] || { cat "$WORK/bad/out.log" >&2; fail "unknown cpu_target: expected exit 2, got $rc"; }
grep -q "recipe.toml:15:14: .*unknown CPU target \"x86-64-v5\"; did you mean \"x86-64-v4\"" "$WORK/bad/out.log" \
  || { cat "$WORK/bad/out.log" >&2; fail "unknown cpu_target: no file:line:col message"; }
grep -q "accepted values: x86-64, x86-64-v2, x86-64-v3, x86-64-v4, haswell" "$WORK/bad/out.log" \
  || { cat "$WORK/bad/out.log" >&2; fail "unknown cpu_target: accepted values not listed"; }
echo "cpu_target: ok"
