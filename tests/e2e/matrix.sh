#!/usr/bin/env bash
# A two-cell [matrix] of one small torch CUDAExtension (tests/fixtures/cuda_extension), end to end,
# on a machine whose only toolkit is CUDA 13.0:
#   torch 2.14.0 (CUDA 13.0): the installed toolkit, exactly;
#   torch 2.15.0 (CUDA 13.2): a toolkit provisioned from PyPI.
# One `opforge build` gives two wheels (+cu130torch214, +cu132torch215) with Requires-Dist
# torch==2.14.* / torch==2.15.*, in one PEP 503 index (dist/simple) and SUMMARY.md; in each cell's
# environment pip, pointed at that index, picks that cell's wheel, whose CPU path then runs.
# `opforge matrix --json` is a GitHub Actions include list; `--cell-index` builds one cell (a
# SLURM array task); `opforge index` merges two jobs' dist/ folders into one wheelhouse. The
# environments are scripts/torch-venv's (torch 2.15) and scripts/torch-venv's second one
# (torch 2.14, OPFORGE_TORCH214_VENV), named per cell in [matrix] environments: several GB each,
# kept outside the repository.
# usage: matrix.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
opforge=$(realpath "$1") src=$2 work=$(realpath -m "$3")
. "$src/tests/e2e/lib.sh"
v215=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
v214=${OPFORGE_TORCH214_VENV:-$HOME/.cache/opforge/torch214-venv}
if [ ! -x "$v215/bin/python" ] || [ ! -x "$v214/bin/python" ]; then
  msg="the PyPI torch environments ($v215, $v214) are missing: run scripts/torch-venv"
  [ "${CI:-}" = "true" ] && fail "$msg"
  echo "SKIP: $msg"; exit 77
fi
need_cuda130
rm -rf "$work" && mkdir -p "$work"
cp -r "$src/tests/fixtures/cuda_extension" "$work/proj"
pyver=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
c214="torch2.14.0-py$pyver" c215="torch2.15.0-py$pyver"
sed -i 's/^local_version = .*/local_version = "cu{cuda_major}{cuda_minor}torch{torch_major}{torch_minor}"/' "$work/proj/opforge.toml"
# ccache: the --cell-index build below compiles a cell again.
sed -i 's/^backend = "command"/backend = "command"\ncache = "ccache"/' "$work/proj/opforge.toml"
cat >> "$work/proj/opforge.toml" <<TOML

[cuda]
version = "torch"
python = "python"
provision = "pypi"

[matrix]
torch = ["2.14.0", "2.15.0"]
python = ["python3"]
requirements = ["numpy", "ninja", "setuptools", "wheel"]
environments = { "$c214" = "$v214/bin/python", "$c215" = "$v215/bin/python" }
TOML
export OPFORGE_CACHE_DIR="$work/cache" CCACHE_DIR="$work/ccache"
unset CUDA_HOME CUDA_PATH DS_SKIP_CUDA_CHECK

# The matrix, as CI's first job reads it.
(cd "$work/proj" && "$opforge" matrix --json opforge.toml) > "$work/matrix.json" || fail "opforge matrix --json"
python3 - "$work/matrix.json" "$c214" "$c215" <<'PY' || { cat "$work/matrix.json"; fail "matrix JSON"; }
import json, sys
j = json.load(open(sys.argv[1]))
inc = j["include"]
assert [c["cell"] for c in inc] == sys.argv[2:4], inc
assert [c["index"] for c in inc] == [0, 1]
assert inc[0]["cuda"] == "13.0" and inc[0]["toolkit_from"] == "installed", inc[0]
assert inc[1]["cuda"] == "13.2" and inc[1]["toolkit_from"].startswith("pypi"), inc[1]
PY

t0=$(date +%s)
(cd "$work/proj" && "$opforge" build opforge.toml) > "$work/build.log" 2>&1 || { tail -60 "$work/build.log"; fail "matrix build"; }
echo "two-cell build: $(( $(date +%s) - t0 )) s"
dist="$work/proj/dist"
w214=$(ls "$dist"/tinyscale-0.2.0+cu130torch214-*.whl) || fail "no torch 2.14 wheel: $(ls "$dist")"
w215=$(ls "$dist"/tinyscale-0.2.0+cu132torch215-*.whl) || fail "no torch 2.15 wheel: $(ls "$dist")"
requires() { python3 -c "
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
m = [n for n in z.namelist() if n.endswith('.dist-info/METADATA')][0]
print('\n'.join(l for l in z.read(m).decode().splitlines() if l.startswith('Requires-Dist: torch')))" "$1"; }
[ "$(requires "$w214")" = "Requires-Dist: torch==2.14.*" ] || fail "2.14 wheel: $(requires "$w214")"
[ "$(requires "$w215")" = "Requires-Dist: torch==2.15.*" ] || fail "2.15 wheel: $(requires "$w215")"
python3 - "$w214.opforge-record.json" "$w215.opforge-record.json" <<'PY' || fail "toolkits in the records"
import json, sys
a = json.load(open(sys.argv[1]))["inputs"]["toolkit"]
b = json.load(open(sys.argv[2]))["inputs"]["toolkit"]
assert a["version"] == "13.0" and "provisioned" not in a, a
assert b["version"] == "13.2" and b["provisioned"]["requirement"].endswith("==13.2.2"), b
PY
grep -q "$c214" "$dist/SUMMARY.md" && grep -q "$c215" "$dist/SUMMARY.md" || { cat "$dist/SUMMARY.md"; fail "SUMMARY.md"; }
[ -f "$dist/simple/tinyscale/index.html" ] || fail "no index page"
[ "$(grep -c '#sha256=' "$dist/simple/tinyscale/index.html")" = 2 ] || fail "the index does not list both wheels"

# In each cell's environment, pip picks that cell's wheel from the index; its CPU path runs.
for pair in "$v214:$w214:13000" "$v215:$w215:13020"; do
  IFS=: read -r venv want cudart <<<"$pair"
  "$venv/bin/python" -m pip install --dry-run --quiet --report "$work/report.json" --index-url "file://$dist/simple" \
    tinyscale > "$work/pip.log" 2>&1 || { cat "$work/pip.log"; fail "pip in $venv"; }
  got=$(python3 -c "import json,sys; print([i['download_info']['url'] for i in json.load(open(sys.argv[1]))['install']][0])" "$work/report.json")
  [ "${got##*/}" = "$(basename "$want" | sed 's/+/%2B/')" ] || [ "${got##*/}" = "$(basename "$want")" ] || fail "pip in $venv picked $got"
  rm -rf "$work/site" && "$venv/bin/python" -m pip install --quiet --no-deps --target "$work/site" "$want" > /dev/null
  PYTHONPATH="$work/site" "$venv/bin/python" -c "
import torch, tinyscale
assert tinyscale.cuda_version() // 10 == $cudart // 10, tinyscale.cuda_version()
assert torch.equal(tinyscale.scale(torch.arange(4.), 3.0), torch.arange(4.) * 3)
" || fail "the wheel of $venv does not run"
done

# CI's fan-out: one cell per job (--cell-index: a SLURM array task), then the merge job.
(cd "$work/proj" && "$opforge" build opforge.toml --cell-index 1 --dist-dir "$work/job1") > "$work/job1.log" 2>&1 \
  || { tail -30 "$work/job1.log"; fail "--cell-index 1"; }
[ "$(ls "$work/job1"/*.whl | wc -l)" = 1 ] && ls "$work/job1"/*cu132torch215*.whl > /dev/null || fail "--cell-index 1 built $(ls "$work/job1")"
mkdir -p "$work/job0" && cp "$w214" "$w214.opforge-record.json" "$work/job0/"
"$opforge" index "$work/house" "$work/job0" "$work/job1" > "$work/index.log" || { cat "$work/index.log"; fail "opforge index"; }
[ "$(grep -c '#sha256=' "$work/house/simple/tinyscale/index.html")" = 2 ] || fail "the merged index does not list both wheels"
# A wheel that fails its checks is refused (exit 2), nothing merged.
mkdir -p "$work/bad" && printf 'not a zip' > "$work/bad/tinyscale-0.2.0-py3-none-any.whl"
set +e
"$opforge" index "$work/house2" "$work/bad" > "$work/bad.log" 2>&1; rc=$?
set -e
[ $rc -eq 2 ] || { cat "$work/bad.log"; fail "a bad wheel: exit $rc, expected 2"; }
[ ! -e "$work/house2/simple" ] || fail "a bad wheel was merged"
echo "OK"
