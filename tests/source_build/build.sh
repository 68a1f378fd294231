#!/usr/bin/env bash
# build.sh SOURCE BUILD_DIR CC CXX TARGET [--check-the-rest]: configures SOURCE with that compiler
# (warnings are errors) into BUILD_DIR, kept for the next run, and builds TARGET; then the built
# opforge must answer --version.
# --check-the-rest: every other C++ file of the project (the tests, the kernels' test programs,
# tools/) is compiled too, with -fsyntax-only: the compiler reads, checks and instantiates all of it
# (errors and warnings as in a build) but writes no code and links nothing. What this build is for
# is whether the sources compile with that compiler; linking the test programs a second time
# proved nothing more and cost about as much as the compiles themselves.
set -euo pipefail
src="$1" build="$2" cc="$3" cxx="$4" target="$5" rest="${6:-}"
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Depend mode: a miss runs no preprocessor (the -MD file ninja asks for names the headers), which
  # cost about 7% of each compile on a machine with an empty cache, as CI's is; hits still work.
  export CCACHE_BASEDIR="$src" CCACHE_NOHASHDIR=1 CCACHE_DEPEND=1
fi
"$cxx" --version | head -1
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O0 -g0" -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g0" \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DOPFORGE_WERROR=ON "${launcher[@]}" >/dev/null
log="$build/build.log"
failed() {
  grep -E -A8 'error|FAILED' "$log" | head -80
  echo "build with $cxx failed; the whole log is $log"
  exit 1
}
cmake --build "$build" --target "$target" -j "$(nproc)" >"$log" 2>&1 || failed
if [ "$rest" = --check-the-rest ]; then
  # The compile commands ninja would run for the files TARGET did not need, with -fsyntax-only in
  # place of -c and no output file; the generated headers exist (TARGET's build made them).
  ninja -C "$build" -t commands "$target" >"$build/target.cmds"
  /usr/bin/python3 - "$build" >"$build/rest.cmds" <<'PY'
import json, os, shlex, sys
build = sys.argv[1]
done = set()  # TARGET's own objects: every "-o FILE" of the commands that build it
for line in open(os.path.join(build, "target.cmds")):
    words = line.split()
    done.update(words[i + 1] for i, w in enumerate(words[:-1]) if w == "-o")
seen = set()
for e in json.load(open(os.path.join(build, "compile_commands.json"))):
    args = shlex.split(e["command"])
    if args[0].endswith("ccache"):
        args = args[1:]
    if "-o" not in args or not e["file"].endswith((".cpp", ".cc", ".cxx")):
        continue
    out = args[args.index("-o") + 1]
    if out in done or e["file"] in seen:
        continue
    seen.add(e["file"])
    i = args.index("-o")
    del args[i:i + 2]
    args = ["-fsyntax-only" if a == "-c" else a for a in args]
    print(e["directory"] + "\t" + shlex.join(args))
PY
  n=$(wc -l <"$build/rest.cmds")
  # One compile per core; each prints its own errors and warnings into the log.
  if ! tr '\n' '\0' <"$build/rest.cmds" |
      xargs -0 -P "$(nproc)" -n1 bash -c 'cd "${1%%	*}" && eval "${1#*	}"' check >>"$log" 2>&1; then
    failed
  fi
  echo "checked the other $n C++ files with $cxx -fsyntax-only"
fi
# -Werror covers opforge's own code; anything else the compiler warns about is shown too.
if grep -q 'warning:' "$log"; then
  grep -A4 'warning:' "$log" | head -40
  echo "the build with $cxx printed warnings"
  exit 1
fi
"$build/opforge" --version
echo "built $target with $cxx"
