#!/usr/bin/env bash
# A plain CMake CUDA project (tests/fixtures/cmake_cuda) built through the command backend with
# [arch] list = "9.0": the plan shows the CMake variables opforge sets, and the wheel holds sm_90
# code only, whether the project's own list gives way to CUDAARCHS/CMAKE_ARGS (its guarded list)
# or is set after project() (TINYCMAKE_HARDCODE: the nvcc wrapper replaces CMake's
# --generate-code options). The project's own arch variables ([arch] env, cmake_define) reach its
# CMake in their forms, and `plan` and the record show them. Built again from another folder with
# another cache folder (another scratch path), the wheel has the same bytes. The caller's
# CMAKE_ARGS are recorded and `verify` replays them. A project asking for a newer CUDA fails with
# CMake's words and a hint.
# usage: cmake_cuda.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
opforge=$(realpath "$1") src=$2 work=$(realpath -m "$3")
. "$src/tests/e2e/lib.sh"
need_cuda130
command -v cmake >/dev/null || fail "no cmake"
rm -rf "$work" && mkdir -p "$work"
cp -r "$src/tests/fixtures/cmake_cuda" "$work/proj"
export OPFORGE_CACHE_DIR="$work/cache"
unset CUDA_HOME CUDA_PATH TORCH_CUDA_ARCH_LIST CUDAARCHS CUDACXX CMAKE_ARGS

# The caller's CUDACXX gives way to the plan's toolkit, and the plan says so.
(cd "$work/proj" && CUDACXX=/opt/other/bin/nvcc "$opforge" plan opforge.toml) > "$work/plan.log" 2>&1 || { cat "$work/plan.log"; fail "plan"; }
grep -qF "  CUDACXX: the environment's /opt/other/bin/nvcc gives way to the plan's toolkit (CUDA 13.0 at /usr/local/cuda-13.0, through opforge's nvcc wrapper) for the project's CMake; choose the toolkit with [cuda] version or CUDA_HOME" "$work/plan.log" \
  || { cat "$work/plan.log"; fail "plan: no note on the caller's CUDACXX"; }
for line in "CUDAARCHS=90-real" "CMAKE_ARGS='-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DCMAKE_CUDA_ARCHITECTURES=90-real -DTINYCMAKE_CAPABILITY=90'" "CUDAToolkit_ROOT=/usr/local/cuda-13.0" \
    "CMAKE_BUILD_PARALLEL_LEVEL="; do
  grep -q "$line" "$work/plan.log" || { cat "$work/plan.log"; fail "plan does not show $line"; }
done
for line in "arch list reaches the project through" "  CUDAARCHS=90-real  (CMake: " "  TINYCMAKE_ARCHS=9.0  (the project ([arch] env, form dotted))" \
    "  CMAKE_ARGS += -DTINYCMAKE_CAPABILITY=90  (the project's CMake ([arch] cmake_define, form numbers))"; do
  grep -qF -- "$line" "$work/plan.log" || { cat "$work/plan.log"; fail "plan does not show '$line'"; }
done
grep -q "CUDAHOSTCXX=$work/cache/host/.*/g++" "$work/plan.log" || { cat "$work/plan.log"; fail "plan: CUDAHOSTCXX is not the host wrapper"; }
grep -q "CUDACXX=$work/cache/nvcc/.*/nvcc" "$work/plan.log" || { cat "$work/plan.log"; fail "plan: CUDACXX is not the nvcc wrapper"; }

gpu_code() {  # WHEEL → the GPU targets of its libraries, one line
  "$opforge" inspect --json "$1" | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(" ".join(sorted({i["name"] for f in j["files"] if "elf" in f for i in f["elf"]["fatbin"]})))'
}
sha() { sha256sum "$1" | cut -d' ' -f1; }
for mode in guarded hardcoded; do
  [ "$mode" = hardcoded ] && sed -i 's|^command = .*|command = ["python3", "build_wheel.py", "-DTINYCMAKE_HARDCODE=ON"]|' "$work/proj/opforge.toml"
  rm -rf "$work/proj/dist"
  (cd "$work/proj" && "$opforge" build opforge.toml) > "$work/build-$mode.log" 2>&1 || { tail -40 "$work/build-$mode.log"; fail "build ($mode)"; }
  wheel=$(only_wheel "$work/proj/dist")
  [ -n "$wheel" ] || fail "no wheel ($mode)"
  code=$(gpu_code "$wheel")
  [ "$code" = "sm_90" ] || { grep -n "generate-code\|gencode" "$work/build-$mode.log" | head; fail "$mode: GPU code '$code', not sm_90"; }
  if [ "$mode" = guarded ]; then
    cp "$wheel" "$work/guarded.whl" && cp "$work/proj/dist/"*.opforge-record.json "$work/guarded.record.json"
    cp "$work/proj/build/opforge/command.log" "$work/command-guarded.log"
  fi
done
# The project saw its own variables, each in its form; the record keeps what the command ran with.
grep -q "tinycmake: TINYCMAKE_CAPABILITY=90 TINYCMAKE_ARCHS=9.0$" "$work/command-guarded.log" \
  || { grep -n "tinycmake:" "$work/command-guarded.log"; fail "the project's arch variables"; }
python3 - "$work/guarded.record.json" <<'PY' || fail "the record's command environment"
import json, sys
env = json.load(open(sys.argv[1]))["inputs"]["command_environment"]
assert env["TINYCMAKE_ARCHS"] == "9.0", env.get("TINYCMAKE_ARCHS")
assert env["CMAKE_ARGS"] == "-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DCMAKE_CUDA_ARCHITECTURES=90-real -DTINYCMAKE_CAPABILITY=90", env.get("CMAKE_ARGS")
assert env["CUDAARCHS"] == "90-real" and env["CUDACXX"].endswith("/nvcc"), env
PY
# The guarded list gave way before nvcc ran; the hard-coded one reached the wrapper, which replaced it.
grep -qx "GPU code: sm_90 (the project asked for the same)" "$work/build-guarded.log" \
  || { grep -n "GPU code" "$work/build-guarded.log"; fail "guarded: GPU code line"; }
grep -qx "GPU code: sm_90; the project asked for sm_75 sm_80 sm_86 sm_89 sm_90 compute_75 compute_80 compute_86 compute_89 compute_90 (10), replaced by the plan's 9.0 (\[arch\] enforce = false keeps the project's)" "$work/build-hardcoded.log" \
  || { grep -n "GPU code" "$work/build-hardcoded.log"; fail "hard-coded: GPU code line"; }
# Reproducible: the guarded build again from another folder, with another cache folder (so
# another scratch tree, nvcc wrapper and CMake build folder path): the same bytes.
cp -r "$src/tests/fixtures/cmake_cuda" "$work/proj2"
(cd "$work/proj2" && OPFORGE_CACHE_DIR="$work/cache2" "$opforge" build opforge.toml) > "$work/build-again.log" 2>&1 \
  || { tail -40 "$work/build-again.log"; fail "build (second folder)"; }
again=$(only_wheel "$work/proj2/dist")
[ "$(sha "$again")" = "$(sha "$work/guarded.whl")" ] || {
  mkdir -p "$work/diff/a" "$work/diff/b"; (cd "$work/diff/a" && unzip -q "$work/guarded.whl"); (cd "$work/diff/b" && unzip -q "$again")
  diff -r "$work/diff/a" "$work/diff/b" | head; fail "the wheel from a second folder differs"; }
# The caller's CMAKE_ARGS change the wheel (a Debug build): the record keeps them, and `verify`
# run without them rebuilds with them and gets the same bytes.
cp -r "$src/tests/fixtures/cmake_cuda" "$work/proj3"
(cd "$work/proj3" && CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Debug" "$opforge" build opforge.toml) > "$work/build-debug.log" 2>&1 \
  || { tail -40 "$work/build-debug.log"; fail "build (CMAKE_ARGS)"; }
[ "$(sha "$(only_wheel "$work/proj3/dist")")" != "$(sha "$work/guarded.whl")" ] || fail "CMAKE_ARGS=-DCMAKE_BUILD_TYPE=Debug changed nothing"
record=$(ls "$work/proj3/dist/"*.opforge-record.json)
"$opforge" verify --allow-run "$record" > "$work/verify.log" 2>&1 || { cat "$work/verify.log"; fail "verify of the CMAKE_ARGS build"; }
grep -qF "env     CMAKE_ARGS=-DCMAKE_BUILD_TYPE=Debug  (from the record)" "$work/verify.log" \
  && grep -q ": ok (the rebuild gave identical bytes" "$work/verify.log" || { cat "$work/verify.log"; fail "verify did not replay CMAKE_ARGS"; }
# A project that asks for a newer CUDA than the recipe's toolkit: exit 1 with CMake's own words and
# what to change.
cp -r "$src/tests/fixtures/cmake_cuda" "$work/proj4"
sed -i 's|^add_library|find_package(CUDAToolkit 14.0 REQUIRED)\nadd_library|' "$work/proj4/CMakeLists.txt"
rc=0; (cd "$work/proj4" && "$opforge" build opforge.toml) > "$work/build-newer.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$work/build-newer.log"; fail "a project wanting CUDA 14.0: exit $rc, not 1"; }
grep -q 'Could NOT find CUDAToolkit: Found unsuitable version "13.0.88", but' "$work/build-newer.log" \
  && grep -q "hint: the project asks for CUDA 14.0 and the plan's toolkit is 13.0 (/usr/local/cuda-13.0): set \[cuda\] version" "$work/build-newer.log" \
  || { cat "$work/build-newer.log"; fail "a project wanting CUDA 14.0: CMake's message or the hint"; }
echo "OK"
