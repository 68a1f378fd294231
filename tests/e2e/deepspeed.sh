#!/usr/bin/env bash
# The real DeepSpeed, end to end: PyPI's sdist of a pinned DeepSpeed, PyPI's CUDA build of torch
# (scripts/torch-venv makes both, outside the repository). The recipe is the one of
# docs/external-projects.md (a local checkout) with one GPU architecture:
#   cpu_adam, utils, fused_adam = true, async_io = "auto"
# → the wheel installs into a fresh environment → ds_report lists exactly those ops (and
# pin_memory, which DeepSpeed's setup.py adds for async_io) as installed → one DeepSpeedCPUAdam
# step equals torch.optim.AdamW → (second) a second build, from a git repository (file://) made
# from the same sdist and checked out elsewhere, gives the same wheel bytes (fused_adam's CUDA
# library included; no compiler cache: every file compiles again).
# A missing environment fails in CI (CI=true) and skips (exit 77) elsewhere.
# usage: deepspeed.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR [install|second|dist|all|provision]
#   install: the first build and its checks; keeps the wheel and the cache folder (the scratch
#            tree's place) for `second`, and writes their work folder's path to WORK_DIR.state
#   second:  the second build, compared byte for byte with the wheel `install` kept; then removes
#            that work folder (CTest runs `install` first: fixture deepspeed_first_wheel)
#   dist:    fused_adam alone through an sccache-dist cluster on this machine, its library compared
#            byte for byte with the one `install` kept (run before `second`, which removes it)
#   all:     install and second, in one run
#   provision: the first build with [cuda] provision = "pypi": torch's CUDA 13.2 from PyPI, no
#            DS_SKIP_CUDA_CHECK, no CUDA-mismatch warning from DeepSpeed, the same ops installed
#            (install keeps the machine's 13.0 and so the mismatch path)
set -euo pipefail
opforge=$(realpath "$1") src=$2 work=$3 mode=${4:-all}
state=$(realpath -m "$work").state
. "$src/tests/e2e/lib.sh"
venv=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
sdist=${OPFORGE_SDIST_DIR:-$HOME/.cache/opforge/sdist}/deepspeed-0.19.8.tar.gz
if [ ! -x "$venv/bin/python" ] || [ ! -f "$sdist" ]; then
  msg="the PyPI torch environment ($venv) or the DeepSpeed sdist ($sdist) is missing: run scripts/torch-venv"
  [ "${CI:-}" = "true" ] && fail "$msg"
  echo "SKIP: $msg"; exit 77
fi
recipe() {  # recipe DIR SOURCE-TABLE: the documented recipe
  { cat <<'TOML'
[package]
name = "deepspeed"
version = "0.19.8"                       # the checkout's version.txt
local_version = "cu{cuda_major}"

[source]
TOML
  echo "$2"
  cat <<'TOML'

[cuda]
version = "torch"
python = "python"
TOML
  # provision: torch's exact CUDA (13.2) from PyPI instead of the machine's 13.0.
  [ "$mode" = provision ] && echo 'provision = "pypi"'
  cat <<'TOML'

[arch]
list = "8.0"

[ops]
cpu_adam = true
utils = true
fused_adam = true
async_io = "auto"

[build]
backend = "command"
command = ["python", "setup.py", "bdist_wheel"]
TOML
  } > "$1/deepspeed.toml"
}

build() {  # build DIR SOURCE-TABLE
  mkdir -p "$1"
  recipe "$1" "$2"
  local t0=$(date +%s)
  (cd "$1" && "$opforge" build deepspeed.toml) > "$1/build.log" 2>&1 || { tail -60 "$1/build.log"; fail "build in $1"; }
  echo "built in $1: $(( $(date +%s) - t0 )) s"
}

start=$(date +%s)
# The work folder of an earlier `install` (kept for `second`): removed before a new first build.
forget_earlier() {
  if [ -f "$state" ]; then
    local old; old=$(cat "$state")
    case $old in */*deepspeed*) rm -rf "$old" ;; esac
    rm -f "$state"
  fi
}
if [ "$mode" = second ] || [ "$mode" = dist ]; then
  [ -f "$state" ] || fail "no first build to compare with ($state): run the test e2e.deepspeed first"
  work=$(cat "$state")
  a=$(only_wheel "$work/a/dist" || true)
  [ -n "$a" ] || fail "the first build's wheel is gone from $work/a/dist"
  export OPFORGE_CACHE_DIR=$work/cache PATH="$venv/bin:$PATH"
  for v in $(env | grep -o '^DS_BUILD_[A-Z0-9_]*' || true); do unset "$v"; done
  unset TORCH_CUDA_ARCH_LIST CUDA_HOME MAX_JOBS DS_ACCELERATOR
  # The sdist has no commit time and the git repository has one: the same time for both wheels.
  export SOURCE_DATE_EPOCH=1700000000
fi
if [ "$mode" = dist ]; then
  # fused_adam alone, through an sccache-dist scheduler and two build servers on this machine
  # (tests/cluster/sccache_dist.sh; sccache from .venv-tools): its library is the same bytes as the
  # one of the first build (compiled here, no cache), and its steps ran on the build servers.
  tools=$src/.venv-tools
  [ -x "$tools/bin/sccache-dist" ] || fail "sccache is not in $tools (scripts/deps installs it)"
  # (the torch environment stays first: .venv-tools has a python of its own)
  export PATH="$venv/bin:$tools/bin:$PATH" SCCACHE_DIST="$tools/bin/sccache-dist" SCHED_PORT=10691
  cluster=$src/tests/cluster/sccache_dist.sh
  trap '"$cluster" stop "$work/cluster" >/dev/null 2>&1 || true' EXIT
  "$cluster" start "$work/cluster" 2
  rm -rf "$work/dist" && mkdir -p "$work/dist" && tar -xzf "$sdist" -C "$work/dist"
  recipe "$work/dist" 'path = "deepspeed-0.19.8"'
  sed -i 's/^\(cpu_adam\|utils\|async_io\) = .*/\1 = false/; s/^backend = "command"/&\ncache = "sccache"\nscheduler = "http:\/\/127.0.0.1:10691"/' \
    "$work/dist/deepspeed.toml"
  t0=$(date +%s)
  (cd "$work/dist" && OPFORGE_SCHEDULER_TOKEN=$(cat "$work/cluster/token") SCCACHE_DIR="$work/dist/sccache" \
    "$opforge" build deepspeed.toml) >"$work/dist/build.log" 2>&1 || { tail -60 "$work/dist/build.log"; fail "build through the cluster"; }
  echo "fused_adam through the cluster: $(( $(date +%s) - t0 )) s"
  grep "^sccache: " "$work/dist/build.log"
  grep -Eq "^sccache: [0-9]+ compile steps: [1-9][0-9]* on 127.0.0.1:1050[12]" "$work/dist/build.log" ||
    fail "no step of fused_adam compiled on a build server"
  d=$(only_wheel "$work/dist/dist")
  lib=$(unzip -Z1 "$d" | grep '^deepspeed/ops/adam/fused_adam_op.*\.so$') || fail "no fused_adam library in $d"
  [ "$(unzip -p "$a" "$lib" | sha256sum)" = "$(unzip -p "$d" "$lib" | sha256sum)" ] ||
    fail "$lib compiled on the build servers differs from the one compiled here"
  echo "PASS: $lib through sccache-dist is the same bytes as compiled here ($(unzip -p "$d" "$lib" | sha256sum | cut -c1-16))"
  rm -rf "$work/dist"
  exit 0
fi
if [ "$mode" != second ]; then
[ "$mode" = provision ] || forget_earlier
rm -rf "$work"; mkdir -p "$work"; work=$(realpath "$work")
# A checkout inside another git work tree would take that tree's commit (and dirtiness).
if git -C "$work" rev-parse --git-dir >/dev/null 2>&1; then
  rm -rf "$work"; work=$(mktemp -d "${TMPDIR:-/tmp}/opforge-e2e-deepspeed.XXXXXX")
fi
echo "work folder: $work"
# The sdist has no commit time and the git repository has one: the same time for both wheels.
export SOURCE_DATE_EPOCH=1700000000
for v in $(env | grep -o '^DS_BUILD_[A-Z0-9_]*' || true); do unset "$v"; done
unset TORCH_CUDA_ARCH_LIST CUDA_HOME MAX_JOBS
# The same cache folder for both builds: the scratch tree of a given content lives at one path.
export OPFORGE_CACHE_DIR=$work/cache
# The user's shell with the environment activated.
export PATH="$venv/bin:$PATH"

mkdir -p "$work/a" && tar -xzf "$sdist" -C "$work/a"
build "$work/a" 'path = "deepspeed-0.19.8"'
a=$(only_wheel "$work/a/dist")
[ "$(basename "$a")" = "deepspeed-0.19.8+cu13-cp311-cp311-linux_x86_64.whl" ] || fail "unexpected wheel name: $a"
grep -q "DS_ACCELERATOR" "$a.opforge-record.json" || fail "the record lacks DS_ACCELERATOR"
python3 - "$a.opforge-record.json" "$mode" <<'PY' || fail "the record's toolkit"
import json, sys
r = json.load(open(sys.argv[1]))["inputs"]
env = r["command_environment"]
if sys.argv[2] == "provision":
    assert r["toolkit"]["version"] == "13.2" and "provisioned" in r["toolkit"], r["toolkit"]
    assert "DS_SKIP_CUDA_CHECK" not in env, env
else:
    assert r["toolkit"]["version"] == "13.0", r["toolkit"]
    assert env.get("DS_SKIP_CUDA_CHECK") == "1", env
PY
# Each op compiled once, in its own step: the command that writes the wheel compiles nothing.
! grep -q "^building '" "$work/a/build/opforge/command.log" ||
  fail "the wheel's command compiled again: $(grep "^building '" "$work/a/build/opforge/command.log" | head -3)"
mismatch=$(grep -c "does not match the version torch was compiled with" "$work/a/build/opforge/command.log" || true)
if [ "$mode" = provision ]; then
  [ "$mismatch" = 0 ] || fail "DeepSpeed warned of a CUDA mismatch $mismatch times with the provisioned toolkit"
fi

# A fresh environment: its own site-packages, with the torch environment's packages visible.
python -m venv "$work/env"
site=$("$work/env/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' > "$site/torch-venv.pth"
"$work/env/bin/python" -m pip install -q --no-deps --no-index "$a"

cd "$work"
# As on a GPU node: with no GPU visible DeepSpeed would pick its CPU accelerator at run time, and
# ds_report counts ops built for another accelerator as not installed.
export DS_ACCELERATOR=cuda
report=$("$work/env/bin/ds_report" 2>&1 | sed 's/\x1b\[[0-9;]*m//g') || { echo "$report"; fail "ds_report"; }
installed=$(echo "$report" | awk '/\.\.\.\.\.* *\[YES\]/ {print $1}' | sort | tr '\n' ' ')
echo "ds_report: installed: $installed"
[ "$installed" = "async_io cpu_adam fused_adam pin_memory utils " ] || { echo "$report"; fail "installed ops: $installed"; }

"$work/env/bin/python" - "$(basename "$a")" <<'PY'
import sys
import torch
import deepspeed
from deepspeed.ops.adam import DeepSpeedCPUAdam

wheel = sys.argv[1]
version = wheel.split("-")[1]
assert deepspeed.__version__ == version, (deepspeed.__version__, version)
torch.manual_seed(0)
init = torch.randn(1000)
grad = torch.randn(1000)
ds_p = torch.nn.Parameter(init.clone())
ref_p = torch.nn.Parameter(init.clone())
ds = DeepSpeedCPUAdam([ds_p], lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, adamw_mode=True)
ref = torch.optim.AdamW([ref_p], lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
ds_p.grad = grad.clone()
ref_p.grad = grad.clone()
ds.step()
ref.step()
diff = (ds_p.detach() - ref_p.detach()).abs().max().item()
print(f"DeepSpeedCPUAdam vs AdamW: max difference {diff:.3g}")
assert diff < 1e-6, diff
PY
grep -qx 'Requires-Dist: torch==2.15.\*' <<<"$(unzip -p "$a" 'deepspeed-*.dist-info/METADATA')" || fail "METADATA does not require torch==2.15.*"

unset DS_ACCELERATOR
# (grep on a variable: `unzip -l | grep -q` fails under pipefail once grep stops reading early)
names=$(unzip -Z1 "$a")
grep -q '^deepspeed/ops/adam/fused_adam_op.*\.so$' <<<"$names" || fail "no fused_adam library in the wheel"
rm -rf "$work/env" "$work/a/deepspeed-0.19.8"
if [ "$mode" = provision ]; then
  rm -rf "$work"
  echo "PASS: DeepSpeed built with the provisioned CUDA 13.2, installed and run in $(( $(date +%s) - start )) s"
  exit 0
fi
if [ "$mode" = install ]; then
  # Kept for `second`: the wheel and the cache folder (the same scratch path for the same content).
  echo "$work" > "$state"
  echo "PASS: DeepSpeed built, installed and run in $(( $(date +%s) - start )) s"
  exit 0
fi
fi  # mode != second

# The same sources as a git repository (public hosts are out of reach here: a file:// one made
# from the sdist), built from another folder, for real again.
mkdir -p "$work/repo" && tar -xzf "$sdist" -C "$work/repo" --strip-components=1
git -C "$work/repo" init -q -b main
git -C "$work/repo" add -A
GIT_AUTHOR_DATE=@1700000000 GIT_COMMITTER_DATE=@1700000000 \
  git -C "$work/repo" -c user.name=opforge -c user.email=opforge@localhost commit -q -m "deepspeed 0.19.8 sdist"
git -C "$work/repo" tag v0.19.8
build "$work/second/place" "git = \"file://$work/repo\"
rev = \"v0.19.8\""
b=$(only_wheel "$work/second/place/dist")
ha=$(sha256sum "$a" | cut -d' ' -f1); hb=$(sha256sum "$b" | cut -d' ' -f1)
echo "first:  $ha $(basename "$a")"; echo "second: $hb $(basename "$b")"
if [ "$ha" != "$hb" ]; then
  python - "$a" "$b" <<'PY'
import sys, zipfile
a, b = (zipfile.ZipFile(p) for p in sys.argv[1:])
for n in sorted(set(a.namelist()) | set(b.namelist())):
    if n not in a.namelist() or n not in b.namelist() or a.read(n) != b.read(n):
        print("differs:", n)
PY
  fail "the two wheels differ"
fi
echo "PASS: the same wheel bytes from a second folder in $(( $(date +%s) - start )) s"
rm -rf "$work"; rm -f "$state"
