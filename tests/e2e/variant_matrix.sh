#!/usr/bin/env bash
# A matrix of four variants published to one index, cheaply: tests/fixtures/variant_matrix (one tiny
# kernel and one call into torch's C++ ABI, no torch header compiled) as a two-cell [matrix]
# (torch 2.14 and 2.15, scripts/torch-venv's environments, CUDA 13.0 for both), built by two jobs
# with two arch lists (8.0 and 9.0, as two CI jobs for two kinds of machine), merged with
# `opforge index` into one wheelhouse. The 8.0 job's plain wheels are the published fallback; the
# 9.0 job publishes its variant wheels only. Then:
#   - the index: 2 plain and 4 variant wheels, a variants.json per version, `opforge verify` passes,
#     variantlib 0.2.2 validates every variant.json and rebuilds each variants.json byte for byte
#     (tests/wheel_tools/check_variants.py), and the same inputs index to the same bytes;
#   - plain pip, pointed at each variant's own index (variants/<label>/simple), downloads by the
#     project's name alone a file with the plain wheel's name whose files are that variant's;
#   - `opforge pick` for an H100, an A100, an H100 with torch 2.14, a CPU-only node and an old
#     driver: the wheel each gets and the pip index URL it prints, from which plain pip installs
#     the H100's pick (--no-deps, into a throwaway folder); variantlib's resolver, given
#     each node's properties as static providers, ranks the same variant first in that version,
#     and offers the nodes pick refuses no variant wheel (only the plain wheel, whose code pick
#     shows cannot run there);
#   - `opforge verify` refuses the wheelhouse once a variants.json disagrees with a wheel (exit 1,
#     naming the wheel and the property).
# usage: variant_matrix.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
opforge=$(realpath "$1") src=$2 work=$(realpath -m "$3")
. "$src/tests/e2e/lib.sh"
v215=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
v214=${OPFORGE_TORCH214_VENV:-$HOME/.cache/opforge/torch214-venv}
need_venv "$v214" "$v215"
[ -x /usr/local/cuda-13.0/bin/nvcc ] || { [ "${CI:-}" = "true" ] && fail "no CUDA 13.0 at /usr/local/cuda-13.0"; echo "SKIP: no CUDA 13.0"; exit 77; }
tools=$src/.venv-tools/bin/python
if ! "$tools" -c 'import variantlib' 2>/dev/null; then
  [ "${CI:-}" = "true" ] && fail "$tools has no variantlib: run scripts/deps"
  echo "SKIP: $tools has no variantlib: run scripts/deps"; exit 77
fi
rm -rf "$work" && mkdir -p "$work"
cp -r "$src/tests/fixtures/variant_matrix" "$work/proj"
pyver=$("$v215/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
cat >> "$work/proj/opforge.toml" <<TOML

[matrix]
torch = ["2.14.0", "2.15.0"]
python = ["$v215/bin/python"]
environments = { "torch2.14.0-py$pyver" = "$v214/bin/python", "torch2.15.0-py$pyver" = "$v215/bin/python" }
TOML
sed 's/^list = "8.0"/list = "9.0"/' "$work/proj/opforge.toml" > "$work/proj/opforge-sm90.toml"
export OPFORGE_CACHE_DIR="$work/cache" CCACHE_DIR="$work/ccache" SOURCE_DATE_EPOCH=1700000000
unset CUDA_HOME CUDA_PATH TORCH_CUDA_ARCH_LIST DS_SKIP_CUDA_CHECK

# Two jobs, one per arch list; the 9.0 job hands on its variant wheels only.
for job in sm80:opforge.toml sm90:opforge-sm90.toml; do
  IFS=: read -r name recipe <<<"$job"
  (cd "$work/proj" && "$opforge" build "$recipe" --dist-dir "$work/$name") > "$work/$name.log" 2>&1 \
    || { tail -40 "$work/$name.log"; fail "the $name job"; }
done
mkdir -p "$work/sm90-variants"
for w in "$work"/sm90/*.whl; do
  [[ $(basename "$w") =~ -[0-9a-z]{8}\.whl$ ]] && cp "$w" "$work/sm90-variants/"
done
"$opforge" index "$work/house" "$work/sm80" "$work/sm90-variants" > "$work/index.log" 2>&1 \
  || { cat "$work/index.log"; fail "opforge index"; }
house=$work/house
ls "$house" > "$work/house.txt"
[ "$(grep -cE '_x86_64\.whl$' "$work/house.txt")" = 2 ] || fail "not 2 plain wheels: $(cat "$work/house.txt")"
[ "$(grep -cE '_x86_64-[0-9a-z]{8}\.whl$' "$work/house.txt")" = 4 ] || fail "not 4 variant wheels: $(cat "$work/house.txt")"
[ "$(grep -c -- '-variants.json$' "$work/house.txt")" = 2 ] || fail "not 2 variants.json: $(cat "$work/house.txt")"
[ "$(ls "$house/variants" | wc -l)" = 4 ] || fail "not 4 variant indexes: $(ls "$house/variants")"
"$opforge" verify "$house" > "$work/verify.log" 2>&1 || { cat "$work/verify.log"; fail "verify of the wheelhouse"; }
"$tools" "$src/tests/wheel_tools/check_variants.py" "$house" > "$work/variantlib.log" 2>&1 \
  || { cat "$work/variantlib.log"; fail "variantlib does not read the index as opforge wrote it"; }
# Same inputs, same index: every file, the variant indexes' copies and pages included.
"$opforge" index "$work/house2" "$work/sm80" "$work/sm90-variants" > /dev/null 2>&1 || fail "opforge index again"
diff -r "$house" "$work/house2" > "$work/repro.diff" || { head -20 "$work/repro.diff"; fail "the index is not reproducible"; }

# Each variant's index, read by plain pip: by name alone, a file of the plain wheel's name holding
# that variant's files (the plain wheel itself for the 8.0 job's variants, a copy for the 9.0 job's).
same_files() {  # same_files A.whl B.whl: the same files but for the .dist-info's RECORD and variant.json
  python3 - "$1" "$2" <<'PY'
import sys, zipfile
def files(p):
    z = zipfile.ZipFile(p)
    return {n: z.read(n) for n in z.namelist() if not n.endswith((".dist-info/RECORD", ".dist-info/variant.json"))}
sys.exit(0 if files(sys.argv[1]) == files(sys.argv[2]) else 1)
PY
}
for w in "$house"/*_x86_64-*.whl; do
  name=$(basename "$w") label=${name##*-} && label=${label%.whl}
  plain=${name%-*}.whl
  rm -rf "$work/got" && "$v215/bin/python" -m pip download --quiet --no-deps --no-cache-dir --disable-pip-version-check \
    --index-url "file://$house/variants/$label/simple" tinyvar -d "$work/got" > "$work/pip.log" 2>&1 \
    || { cat "$work/pip.log"; fail "pip from variants/$label/simple"; }
  [ "$(ls "$work/got")" = "$plain" ] || fail "pip from variants/$label/simple got $(ls "$work/got"), not $plain"
  same_files "$work/got/$plain" "$w" || fail "pip from variants/$label/simple got files that are not $name's"
done

# The nodes: this machine's `doctor --json`, with each node's GPUs, driver and torch.
mkdir -p "$work/nodes"
"$opforge" doctor --json > "$work/base.json" 2>/dev/null || true
node() {  # node NAME PYTHON-EXPRESSION: nodes/NAME.json, edited from base.json by the expression on `r`
  python3 - "$work/base.json" "$work/nodes/$1.json" "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["node"].update({"host": sys.argv[3], "glibc": "2.36", "glibcxx": "3.4.30", "cxxabi": "1.3.13",
                  "cpu_level": "x86-64-v3", "python": "3.11", "machine": "x86_64",
                  "driver": {"version": "580.65.06", "cuda": "13.0"}})
r["gpus"] = {"reader": "driver API", "devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "capability": "9.0"}]}
r["torch"] = {"python": "python3", "status": "CUDA 13.2", "version": "2.15.0+cu132", "cuda": "13.2"}
exec(sys.argv[4])
json.dump(r, open(sys.argv[2], "w"), indent=2)
PY
}
node h100 'pass'
node a100 'r["gpus"]["devices"] = [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "capability": "8.0"}]'
node h100_torch214 'r["torch"].update({"status": "CUDA 13.0", "version": "2.14.0+cu130", "cuda": "13.0"})'
node cpu_only 'r["gpus"]["devices"] = []; r["node"]["driver"] = None; r["torch"].update({"status": "CPU", "version": "2.15.0+cpu", "cuda": None})'
node old_driver 'r["node"]["driver"] = {"version": "535.104.05", "cuda": "12.2"}'
reports=$(for n in h100 a100 h100_torch214 cpu_only old_driver; do echo "$work/nodes/$n.json"; done)
set +e
"$opforge" pick "$house" --nodes $reports > "$work/pick.txt" 2>&1; rc=$?
"$opforge" pick "$house" --nodes $reports --json > "$work/pick.json" 2> /dev/null
set -e
[ $rc -eq 1 ] || { cat "$work/pick.txt"; fail "pick: exit $rc, expected 1 (two nodes get no wheel)"; }
grep -q "2 nodes get no wheel from $house: cpu_only (gpu, driver), old_driver (driver); each wheel's reasons are above" "$work/pick.txt" ||
  { cat "$work/pick.txt"; fail "pick's error"; }
# What a variant-aware installer takes on the old driver: the plain wheel, which pick says does not run.
grep -A2 "^old_driver" "$work/pick.txt" | grep -q "^    resolver .* takes tinyvar-0.1.0+cu130torch215-py3-none-manylinux_2_34_x86_64.whl, the plain wheel: it does not check .*; that wheel does not run here: .*driver: driver 535.104.05 is older than 580" ||
  { cat "$work/pick.txt"; fail "pick does not say what an installer takes on old_driver"; }
python3 - "$work/pick.json" "$house" "$work/pick.txt" <<'PY' || { cat "$work/pick.txt"; fail "pick's choices"; }
import json, re, sys
pick, house, text = json.load(open(sys.argv[1])), sys.argv[2], open(sys.argv[3]).read()
got = {n: e["projects"][0] for e in pick["nodes"] for n in e["nodes"]}
def variant_of(wheel, torch, arch):  # the variant wheel of that cell and arch list: its labels' properties
    assert wheel, (torch, arch)
    label = re.fullmatch(r".*-([0-9a-z]{8})\.whl", wheel).group(1)
    props = json.load(open(f"{house}/{wheel.split('+')[0]}+cu130torch{torch}-variants.json"))["variants"][label]
    assert "+cu130torch" + torch in wheel and props["nvidia"]["sm_arch"] == [arch + "_real"], (wheel, props)
    url = f"file://{house}/variants/{label}/simple"
    assert got_p["pip_index_url"] == url, got_p
    assert f"  tinyvar: install {wheel}\n    pip      pip install --index-url {url} tinyvar\n" in text
for node, torch, arch in [("h100", "215", "90"), ("a100", "215", "80"), ("h100_torch214", "214", "90")]:
    got_p = got[node]
    variant_of(got_p["wheel"], torch, arch)
for node in ("cpu_only", "old_driver"):
    assert got[node]["wheel"] is None and got[node]["pip_index_url"] is None, got[node]
PY

# The H100's pick installed as pick prints it, by plain pip into a throwaway folder: its library is
# the variant wheel's (sm_90 code), not the published plain wheel's (sm_80).
h100_url=$(python3 -c "import json,sys; print([e for e in json.load(open(sys.argv[1]))['nodes'] if 'h100' in e['nodes']][0]['projects'][0]['pip_index_url'])" "$work/pick.json")
h100_wheel=$(python3 -c "import json,sys; print([e for e in json.load(open(sys.argv[1]))['nodes'] if 'h100' in e['nodes']][0]['projects'][0]['wheel'])" "$work/pick.json")
"$v215/bin/python" -m pip install --quiet --no-deps --no-cache-dir --disable-pip-version-check --target "$work/site" \
  --index-url "$h100_url" tinyvar > "$work/pip-install.log" 2>&1 || { cat "$work/pip-install.log"; fail "pip install from $h100_url"; }
python3 - "$work/site/tinyvar/_k.so" "$house/$h100_wheel" <<'PY' || fail "pip installed another library than $h100_wheel's"
import sys, zipfile
assert open(sys.argv[1], "rb").read() == zipfile.ZipFile(sys.argv[2]).read("tinyvar/_k.so")
PY

# variantlib's resolver with each node's properties: the same variant first in the pick's version;
# for the nodes pick refuses, no variant wheel at all (the plain wheel only, the resolver's null
# variant: it cannot see that the plain wheel's code needs a GPU, and driver 580 for CUDA 13).
"$tools" "$src/tests/wheel_tools/pick_variants.py" "$house" "$work/pick.json" h100=x86_64 a100=x86_64 \
  h100_torch214=x86_64 cpu_only=x86_64 old_driver=x86_64 > "$work/resolved.json" 2> "$work/resolved.log" \
  || { cat "$work/resolved.log"; fail "variantlib's resolver"; }
python3 - "$work/resolved.json" "$work/pick.json" <<'PY' || { cat "$work/resolved.json"; fail "variantlib and pick disagree"; }
import json, re, sys
theirs = json.load(open(sys.argv[1]))
for node, r in theirs.items():
    if r["pick"]:
        namever = r["pick"][0].split("-py3-")[0]
        assert r["by_version"][namever][0] == r["pick"][0], (node, r)
    else:
        assert all(not re.search(r"-[0-9a-z]{8}\.whl$", w) for w in r["variantlib"]), (node, r)
PY
grep -A8 "^cpu_only" "$work/pick.txt" | grep -q "gpu:" || { cat "$work/pick.txt"; fail "pick does not say why cpu_only gets no wheel"; }

# A variants.json that disagrees with a wheel's variant.json: verify names the wheel and the property.
cp -r "$house" "$work/bad"
f=$(ls "$work/bad"/*torch215-variants.json)
sed -i 's/"2\.15"/"2.13"/' "$f"
set +e
"$opforge" verify "$work/bad" > "$work/bad.log" 2>&1; rc=$?
set -e
[ $rc -eq 1 ] || { cat "$work/bad.log"; fail "verify of a disagreeing index: exit $rc, expected 1"; }
w=$(basename "$(ls "$work"/bad/*torch215*_x86_64-*.whl | head -n 1)")
grep -qF "$w: its variant.json says 'abi_dependency :: torch :: 2.15', $(basename "$f") does not" "$work/bad.log" \
  || { cat "$work/bad.log"; fail "verify does not name the wheel and the property"; }
echo "OK"
