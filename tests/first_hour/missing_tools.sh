#!/usr/bin/env bash
# Missing tools are exit 3 before any work, named with their package, and `plan` shows the same
# failure: no ninja, --cache ccache without ccache, an empty PATH, a [compiler] host that is not
# installed, one nvcc refuses (a fake gcc-16). Nothing is compiled, nothing lands in dist/.
# usage: missing_tools.sh OPFORGE_BINARY WORK_DIR
set -euo pipefail
OPFORGE=$(realpath "$1") WORK=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/slow_op.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$WORK"; mkdir -p "$WORK"; WORK=$(realpath "$WORK")
export OPFORGE_CACHE_DIR=$WORK/cache
for v in $(env | grep -o '^DS_BUILD_[A-Z0-9_]*' || true); do unset "$v"; done
slow_op_tree "$WORK/tree"
slow_recipe "$WORK/r.toml" "$WORK/tree"

# A PATH with the compilers and strip but neither ninja nor ccache.
mkdir -p "$WORK/bin"
for t in gcc g++ cc c++ strip ld as python3 sh; do ln -s "$(PATH=/usr/bin:/bin command -v $t)" "$WORK/bin/$t"; done

# expect3 NAME MESSAGE ENV... -- ARGS: exit 3, MESSAGE in stderr, nothing built.
expect3() {
  local name=$1 message=$2; shift 2
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  set +e; env "${envs[@]}" "$OPFORGE" "$@" > "$WORK/$name.out" 2> "$WORK/$name.err"; rc=$?; set -e
  cat "$WORK/$name.err"
  [ "$rc" = 3 ] || fail "$name: exit $rc, not 3"
  grep -qF -- "$message" "$WORK/$name.err" || fail "$name: stderr lacks: $message"
  grep -q '^opforge: error: ' "$WORK/$name.err" || fail "$name: no 'opforge: error:' prefix"
  [ ! -e "$WORK/dist" ] || fail "$name: dist/ was written"
  [ -z "$(find "$WORK/build" -name '*.o' 2>/dev/null)" ] || fail "$name: something was compiled"
}

msg="the build needs 'ninja' (runs the compile steps): not found on PATH=$WORK/bin"
expect3 plan_no_ninja "$msg" PATH="$WORK/bin" -- plan "$WORK/r.toml"
grep -q 'c++ slow/a.cpp\|/a.cpp' "$WORK/plan_no_ninja.out" || fail "plan printed no plan before its error"
expect3 build_no_ninja "$msg" PATH="$WORK/bin" -- build "$WORK/r.toml"
grep -qF 'hint: install ninja (apt-get install ninja-build, dnf install ninja-build, or pip install ninja)' \
  "$WORK/build_no_ninja.err" || fail "no package named for ninja"

ln -s "$(command -v ninja)" "$WORK/bin/ninja"
expect3 build_no_ccache "'ccache' (--cache ccache)" PATH="$WORK/bin" -- build "$WORK/r.toml" --cache ccache
grep -qF 'ccache (apt-get install ccache' "$WORK/build_no_ccache.err" || fail "no package named for ccache"
# plan's commands are the build's, ccache included.
if command -v ccache > /dev/null; then
  "$OPFORGE" plan "$WORK/r.toml" > "$WORK/plan_plain.out"
  grep -q '^  ccache ' "$WORK/plan_plain.out" && fail "plan shows ccache without --cache ccache"
  slow_recipe "$WORK/rc.toml" "$WORK/tree" '[build]' 'cache = "ccache"'
  "$OPFORGE" plan "$WORK/rc.toml" > "$WORK/plan_ccache.out"
  grep -q '^  ccache .*-c .*/a.cpp' "$WORK/plan_ccache.out" || fail "plan's commands leave out the ccache prefix"
fi

expect3 build_empty_path "PATH is empty" PATH= -- build "$WORK/r.toml"

slow_recipe "$WORK/g16.toml" "$WORK/tree" '[compiler]' 'host = "g++-16"'
expect3 host_not_installed "no host compiler 'g++-16' on PATH" -- build "$WORK/g16.toml"
grep -qF 'apt-get install g++-16' "$WORK/host_not_installed.err" || fail "no package named for g++-16"

# A gcc 16 that nvcc refuses (CUDA 13.0 takes gcc <= 15): the CUDA op's error names the compiler.
if [ -x /usr/local/cuda/bin/nvcc ]; then
  mkdir -p "$WORK/bin16"
  for c in gcc g++; do
    printf '#!/bin/sh\ncase "$1" in -dumpfullversion|-dumpversion) echo 16.1.0; exit 0;; esac\nexec /usr/bin/%s "$@"\n' "$c" \
      > "$WORK/bin16/$c-16"
    chmod +x "$WORK/bin16/$c-16"
  done
  mkdir -p "$WORK/tree/ops/gpu"
  printf 'name = "gpu"\nkind = "cuda"\ndescription = "a CUDA op"\nsources = ["k.cu"]\n' > "$WORK/tree/ops/gpu/op.toml"
  echo '__global__ void k() {}' > "$WORK/tree/ops/gpu/k.cu"
  slow_recipe "$WORK/refused.toml" "$WORK/tree" '[compiler]' 'host = "g++-16"'
  sed -i 's/^slow = true/slow = true\ngpu = true/' "$WORK/refused.toml"
  set +e
  PATH="$WORK/bin16:$PATH" "$OPFORGE" plan "$WORK/refused.toml" > /dev/null 2> "$WORK/refused.err"; rc=$?
  set -e
  cat "$WORK/refused.err"
  [ "$rc" = 3 ] || fail "refused host: exit $rc"
  grep -qF "[compiler] host g++-16" "$WORK/refused.err" || grep -qF "gcc-16" "$WORK/refused.err" \
    || fail "refused host: the compiler is not named"
  grep -q 'install a CUDA toolkit' "$WORK/refused.err" && fail "refused host: told to install a toolkit"
  # CPU-only: the named compiler is used for the CPU code, not the default one.
  PATH="$WORK/bin16:$PATH" "$OPFORGE" plan "$WORK/g16.toml" > "$WORK/g16_plan.out"
  grep -q 'g++-16 .*-c .*/a.cpp\|shim/g++ .*-c .*/a.cpp' "$WORK/g16_plan.out" \
    || { cat "$WORK/g16_plan.out"; fail "CPU-only: [compiler] host is not what compiles"; }
fi
echo "missing_tools: ok"
