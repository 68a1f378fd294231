#!/usr/bin/env bash
# llama-cpp-python 0.3.36 (llama.cpp and ggml vendored; scikit-build-core and CMake) from its PyPI
# sdist, CUDA on, built by opforge for one architecture (bench/projects/llama-cpp-python.toml) and
# measured against the project's own CUDA build. Three steps (OPFORGE_BENCH_STEPS, default all):
#   build   opforge build of the recipe: wall, CPU of the process tree (time -f %U %S), the largest
#           process's peak, each compile step's CPU and peak memory (stepwatch.py), the wheel's GPU
#           code (inspect), its libraries loaded (see load_check) and its sha256;
#   twice   the same recipe again from another folder with another OPFORGE_CACHE_DIR (another
#           scratch path, no compiler cache): the same wheel bytes, or the files that differ;
#   subset  the same named .cu files compiled both ways, serially, one at a time (ninja -j1):
#           llama-cpp-python's own build, `CMAKE_ARGS="-DGGML_CUDA=on -DGGML_NATIVE=off"` (every
#           architecture ggml picks for CUDA 13: 75-virtual 80-virtual 86-real 89-real 90-virtual
#           120a-real 121a-real), against a build folder configured with the environment
#           `opforge env` prints for the recipe (its nvcc wrapper, [arch] list = "9.0"). The whole
#           default build is 144 .cu files in seven architectures, hours on 2 cores: not run.
# The environment (scikit-build-core 1.1.2, and what `import llama_cpp` needs) is a venv outside
# the repository, made on first use: $OPFORGE_LLAMA_VENV (default ~/.cache/opforge-bench/llama-venv).
# The work folder (default ~/.cache/opforge-bench/llama) is kept: a build killed by a time limit
# resumes on the next run of the same step.
#   bench/projects/llama_cpp_python.sh OPFORGE [RESULTS_FILE]   (e.g. bench/results/llama_cpp_python.txt)
set -euo pipefail
opforge=$(realpath "$1") results=${2:+$(realpath -m "$2")}
here=$(cd "$(dirname "$0")" && pwd)
steps=${OPFORGE_BENCH_STEPS:-build twice subset}
version=0.3.36 tree=llama_cpp_python-0.3.36 recipe=llama-cpp-python.toml
cuda=/usr/local/cuda-13.0  # the recipe's [cuda] version; the default build is given the same nvcc
sdist=$("$here/../../tests/e2e/fetch_sdist.sh" llama_cpp_python "$version")
work=${OPFORGE_BENCH_DIR:-$HOME/.cache/opforge-bench/llama}
venv=${OPFORGE_LLAMA_VENV:-$HOME/.cache/opforge-bench/llama-venv}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet scikit-build-core==1.1.2 numpy jinja2 diskcache typing-extensions
fi
# The files both sides compile in the subset step (ggml-cuda's folder): the largest source, the
# two largest kernel files, and one template instance of each kind (mmq, mmf, the three
# FlashAttention kernels) — the kinds that make up 75 of the 144 .cu files.
subset=(ggml-cuda.cu mmvq.cu fattn.cu
        template-instances/mmq-instance-q4_k.cu template-instances/mmf-instance-ncols_8.cu
        template-instances/fattn-mma-f16-instance-ncols1_8-ncols2_4.cu
        template-instances/fattn-tile-instance-dkq128-dv128.cu template-instances/fattn-vec-instance-f16-f16.cu)
mkdir -p "$work"
unset TORCH_CUDA_ARCH_LIST MAX_JOBS CUDA_HOME CUDA_PATH CMAKE_ARGS CUDAARCHS CUDACXX SKBUILD_BUILD_DIR SOURCE_DATE_EPOCH
# ggml puts ccache in front of every compile when it is on PATH (GGML_CCACHE, on by default): every
# compile timed here runs for real (opforge sets it too without [build] cache = "ccache").
export CCACHE_DISABLE=1
export PATH="$venv/bin:$PATH"
load() { cut -d' ' -f1-3 /proc/loadavg; }
cpu() { python3 -c "print('%.1f' % ($1 + $2))"; }
gib() { python3 -c "print('%.2f' % ($1 / 2**20))"; }
report=""
say() { echo "$*"; report+="$*"$'\n'; }
unpack() { [ -d "$1/$tree" ] || { mkdir -p "$1" && tar -xzf "$sdist" -C "$1"; }; }
timed() {  # timed NAME CMD...: runs CMD under time(1) and stepwatch.py; NAME.{time,steps,log}; OPFORGE_CACHE_DIR set
  local name=$1; shift
  /usr/bin/time -f "%e %M %U %S" -o "$work/$name.time" "$@" > "$work/$name.log" 2>&1 &
  local pid=$!
  # Only the compiles of this build's scratch trees (its cache folder): not the subset step's.
  python3 "$here/stepwatch.py" "$pid" "$work/$name.steps" "$OPFORGE_CACHE_DIR/" &
  local watch=$!
  local rc=0; wait "$pid" || rc=$?
  wait "$watch" || true
  return $rc
}
build() {  # build NAME CACHE: the recipe from $work/NAME with OPFORGE_CACHE_DIR=CACHE
  unpack "$work/$1"
  cp "$here/$recipe" "$work/$1/$recipe"
  rm -rf "$work/$1/dist"
  (cd "$work/$1" && OPFORGE_CACHE_DIR=$2 timed "$1" "$opforge" build "$recipe") || { tail -30 "$work/$1.log"; exit 1; }
  ls "$work/$1"/dist/*.whl
}
gpu_code() {  # each library of the wheel with its GPU code
  "$opforge" inspect --json "$1" | python3 -c "
import json, sys
for f in json.load(sys.stdin)['files']:
    if f.get('elf', {}).get('fatbin'):
        print('  %s: %s' % (f['path'], ' '.join(sorted({i['name'] for i in f['elf']['fatbin']}))))"
}
steps_table() {  # the heaviest compile steps and the totals (stepwatch.py's lines)
  python3 - "$1" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
rows = [(r[0], float(r[1]), float(r[2]), float(r[3])) for r in rows]
cu = [r for r in rows if r[0].endswith(".cu")]
print("  %d compile steps (%d .cu): CPU sum %.0f s (.cu %.0f s); per .cu file: CPU median %.1f s, max %.1f s; peak median %.2f GiB, max %.2f GiB"
      % (len(rows), len(cu), sum(r[2] for r in rows), sum(r[2] for r in cu),
         sorted(r[2] for r in cu)[len(cu) // 2], max(r[2] for r in cu),
         sorted(r[3] for r in cu)[len(cu) // 2] / 1024, max(r[3] for r in cu) / 1024))
for name, wall, cpu, peak in sorted(rows, key=lambda r: -r[2])[:10]:
    print("  %-64s wall %6.1f s  CPU %6.1f s  peak %5.2f GiB" % (name.split("/ggml/src/")[-1][-64:], wall, cpu, peak / 1024))
PY
}
load_check() {  # load_check WHEEL: import llama_cpp from a throwaway folder, the toolkit's libraries on the path
  rm -rf "$work/site"
  "$venv/bin/python" -m pip install --quiet --no-deps --target "$work/site" "$1"
  local lib=$work/site/llama_cpp/lib
  say "  ldd libggml-cuda.so, not found: $(LD_LIBRARY_PATH=$cuda/lib64 ldd "$lib/libggml-cuda.so" | awk '/not found/ {printf "%s ", $1}')(none other)"
  say "  RPATH/RUNPATH of each library: $(for f in "$lib"/*.so; do readelf -d "$f" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p'; done | sort -u | tr '\n' ' ')"
  # No driver on a machine without a GPU: libcuda.so.1 is the toolkit's stub there (cuInit then
  # fails with CUDA_ERROR_STUB_LIBRARY), so that everything else is loaded as it would be.
  local stub=$work/stub out
  mkdir -p "$stub" && ln -sf "$cuda/lib64/stubs/libcuda.so" "$stub/libcuda.so.1"
  local path=$cuda/lib64
  ldconfig -p | grep -q 'libcuda\.so\.1 ' || { path=$path:$stub; say "  no libcuda.so.1 (driver) here: the toolkit's stub in its place"; }
  out=$(cd /tmp && LD_LIBRARY_PATH=$path PYTHONPATH="$work/site" "$venv/bin/python" -c '
import ctypes, os, sys
lib = sys.argv[1]
for name in ("libggml-base.so", "libggml-cpu.so", "libggml-cuda.so", "libggml.so", "libllama.so", "libmtmd.so"):
    if os.path.exists(os.path.join(lib, name)):
        ctypes.CDLL(os.path.join(lib, name), mode=os.RTLD_LAZY | os.RTLD_GLOBAL)
print("ctypes: every library loads (RTLD_LAZY)")
try:
    import llama_cpp
    print("import llama_cpp: ok,", llama_cpp.__version__, "; GPU offload supported:", llama_cpp.llama_supports_gpu_offload())
except Exception as e:
    print("import llama_cpp: failed:", type(e).__name__, e)
' "$lib" 2>&1) || true
  while IFS= read -r l; do say "  $l"; done <<< "$out"
}

say "llama-cpp-python $version (PyPI sdist), CUDA $("$cuda/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p'), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB; load before: $(load)"

if [[ " $steps " == *" build "* ]]; then
  if [ -n "${OPFORGE_BENCH_REUSE:-}" ] && [ -s "$work/of.time" ] && ls "$work"/of/dist/*.whl > /dev/null 2>&1; then
    wheel=$(ls "$work"/of/dist/*.whl)  # OPFORGE_BENCH_REUSE=1: an earlier run's build, reported again
    say "(the build that finished $(date -u -r "$work/of.time" +%Y-%m-%dT%H:%MZ), reported again: OPFORGE_BENCH_REUSE=1)"
  else
    wheel=$(build of "$work/cache")
  fi
  read -r e m u s < "$work/of.time"
  say "opforge build ([arch] list = \"9.0\"): wall $e s  CPU $(cpu "$u" "$s") s  peak $(gib "$m") GiB"
  say "  $(grep -m1 '^GPU code' "$work/of.log")"
  say "  wheel $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB, sha256 $(sha256sum < "$wheel" | cut -d' ' -f1)"
  say "  GPU code per library (inspect):"
  say "$(gpu_code "$wheel")"
  say "$(steps_table "$work/of.steps")"
  load_check "$wheel"
fi

if [[ " $steps " == *" twice "* ]]; then
  first=$(ls "$work"/of/dist/*.whl)
  rm -rf "$work/of2" "$work/cache2"
  second=$(build of2 "$work/cache2")
  read -r e m u s < "$work/of2.time"
  a=$(sha256sum < "$first" | cut -d' ' -f1) b=$(sha256sum < "$second" | cut -d' ' -f1)
  say "again from another folder and cache folder: wall $e s  CPU $(cpu "$u" "$s") s; sha256 $b: $([ "$a" = "$b" ] && echo "the same bytes" || echo "DIFFERENT from $a")"
  say "$(steps_table "$work/of2.steps")"
  [ "$a" = "$b" ] || say "$(python3 - "$first" "$second" <<'PY'
import sys, zipfile
a, b = (zipfile.ZipFile(p) for p in sys.argv[1:3])
for n in sorted(set(a.namelist()) | set(b.namelist())):
    if n not in a.namelist() or n not in b.namelist() or a.read(n) != b.read(n):
        print("  differs:", n)
PY
)"
fi

if [[ " $steps " == *" subset "* ]]; then
  objects=()
  for f in "${subset[@]}"; do objects+=("vendor/llama.cpp/ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/$f.o"); done
  # Both build folders configured as scikit-build-core configures (Release, Ninja, CMAKE_ARGS);
  # the project's default with the same toolkit's nvcc.
  rm -rf "$work/def" "$work/sub"
  unpack "$work/def"
  (cd "$work/def" && CUDACXX=$cuda/bin/nvcc cmake -S "$tree" -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGGML_CUDA=on -DGGML_NATIVE=off) > "$work/def.configure.log" 2>&1 || { tail -30 "$work/def.configure.log"; exit 1; }
  unpack "$work/sub"
  cp "$here/$recipe" "$work/sub/$recipe"
  mkdir -p "$work/sub/build/opforge"  # where the nvcc wrapper logs what the project asked for
  (cd "$work/sub" && export OPFORGE_CACHE_DIR=$work/cache-sub && eval "$("$opforge" env "$recipe")" &&
    cmake -S "$tree" -B "$tree/build/skbuild" -G Ninja -DCMAKE_BUILD_TYPE=Release $CMAKE_ARGS) \
    > "$work/sub.configure.log" 2>&1 || { tail -30 "$work/sub.configure.log"; exit 1; }
  say "subset: ${#subset[@]} of ggml-cuda's 144 .cu files, one at a time (ninja -j1): each by the default build, then by opforge's"
  say "  default: $(grep -m1 -o 'Using CMAKE_CUDA_ARCHITECTURES=[^ ]*' "$work/def.configure.log")"
  say "  opforge: $(grep -m1 -o 'Using CMAKE_CUDA_ARCHITECTURES=[^ ]*' "$work/sub.configure.log") (CMAKE_ARGS from opforge env; the nvcc wrapper compiles the plan's list whatever nvcc is asked)"
  rows=""
  for i in "${!subset[@]}"; do
    o=${objects[$i]}
    /usr/bin/time -f "%e %U %S %M" -o "$work/def.one" ninja -C "$work/def/build" -j1 "$o" > "$work/def.ninja.log" 2>&1 ||
      { tail -20 "$work/def.ninja.log"; exit 1; }
    (cd "$work/sub" && export OPFORGE_CACHE_DIR=$work/cache-sub && eval "$("$opforge" env "$recipe")" &&
      /usr/bin/time -f "%e %U %S %M" -o "$work/sub.one" ninja -C "$tree/build/skbuild" -j1 "$o") > "$work/sub.ninja.log" 2>&1 ||
      { tail -20 "$work/sub.ninja.log"; exit 1; }
    rows+="${subset[$i]} $(cat "$work/def.one") $(cat "$work/sub.one")"$'\n'
  done
  say "$(python3 - <<PY
rows = [l.split() for l in """$rows""".strip().splitlines()]
print("  %-58s %24s %24s %14s" % ("file", "default wall / CPU (s)", "opforge wall / CPU (s)", "ratio wall/CPU"))
t = [0.0] * 4
for r in rows:
    dw, dc, ow, oc = float(r[1]), float(r[2]) + float(r[3]), float(r[5]), float(r[6]) + float(r[7])
    t = [t[0] + dw, t[1] + dc, t[2] + ow, t[3] + oc]
    print("  %-58s %11.1f / %8.1f %11.1f / %8.1f %6.2f / %5.2f   peak %.2f / %.2f GiB"
          % (r[0], dw, dc, ow, oc, ow / dw, oc / dc, int(r[4]) / 2**20, int(r[8]) / 2**20))
print("  %-58s %11.1f / %8.1f %11.1f / %8.1f %6.2f / %5.2f   (target: wall <= 0.25x)" % ("all", t[0], t[1], t[2], t[3], t[2] / t[0], t[3] / t[1]))
PY
)"
  say "  opforge's nvcc wrapper: the project asked for $(sort -u "$work/sub/build/opforge/nvcc-arch.log" | tr -s ' \n' ' ')"
fi
say "load after: $(load)"
[ -z "$results" ] || printf '%s (bench/projects/llama_cpp_python.sh, steps: %s)\n%s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$steps" "$report" >> "$results"
