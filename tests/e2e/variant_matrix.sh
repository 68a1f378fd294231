#!/usr/bin/env bash
# A matrix of four variants and their fallbacks published by one recipe in one run, cheaply:
# tests/fixtures/variant_matrix (one tiny kernel and one call into torch's C++ ABI, no torch header
# compiled) with [matrix] torch 2.14 and 2.15 (scripts/torch-venv's environments, CUDA 13.0 for
# both) × arch ["8.0", "9.0"]: per torch, an sm_80 and an sm_90 variant wheel and the plain wheel
# for both (sm_80, sm_90 and compute_90 PTX), into one dist/, no file copied by hand. Then:
#   - the index: 2 plain and 4 variant wheels, a variants.json per version, `opforge verify` passes,
#     variantlib 0.2.2 validates every variant.json and rebuilds each variants.json byte for byte
#     (tests/wheel_tools/check_variants.py), and the same inputs index to the same bytes;
#   - each plain wheel holds the union of its variants' SASS and PTX for the newest;
#   - plain pip, pointed at each variant's own index (variants/<label>/simple), downloads by the
#     project's name alone a file with the plain wheel's name whose files are that variant's;
#   - `opforge pick` for an H100, an A100, an H100 with torch 2.14, an RTX PRO 6000 (12.0: newer
#     than every variant's SASS), a V100 (7.0: older than all), a CPU-only node and an old driver:
#     the wheel each gets and the pip index URL it prints, from which plain pip installs the H100's
#     pick (--no-deps, into a throwaway folder); variantlib's resolver, given each node's
#     properties as static providers, ranks the same variant first in that version, and offers the
#     nodes pick refuses no variant wheel;
#   - `opforge verify WHEELHOUSE --nodes`: on the 12.0 node every installer gets a wheel that runs
#     (the fallback, by its PTX); on the V100 pip and a variant-aware installer get the plain wheel,
#     which cannot run there, and opforge pick refuses: exit 1 naming it;
#   - `opforge verify` refuses the wheelhouse once a variants.json disagrees with a wheel (exit 1,
#     naming the wheel and the property).
# usage: variant_matrix.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
opforge=$(realpath "$1") src=$2 work=$(realpath -m "$3")
. "$src/tests/e2e/lib.sh"
v215=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
v214=${OPFORGE_TORCH214_VENV:-$HOME/.cache/opforge/torch214-venv}
need_venv "$v214" "$v215"
need_cuda130
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
arch = ["8.0", "9.0"]
environments = { "torch2.14.0-py$pyver" = "$v214/bin/python", "torch2.15.0-py$pyver" = "$v215/bin/python" }
TOML
export OPFORGE_CACHE_DIR="$work/cache" CCACHE_DIR="$work/ccache" SOURCE_DATE_EPOCH=1700000000
unset CUDA_HOME CUDA_PATH TORCH_CUDA_ARCH_LIST DS_SKIP_CUDA_CHECK

# One CI matrix of six jobs, as `opforge matrix --json` hands them out: the arch axis's cells and
# each torch's fallback.
"$opforge" matrix "$work/proj/opforge.toml" --json > "$work/matrix.json" 2> "$work/matrix.log" \
  || { cat "$work/matrix.log"; fail "opforge matrix --json"; }
python3 - "$work/matrix.json" "$pyver" <<'PY' || { cat "$work/matrix.json"; fail "the CI matrix"; }
import json, sys
got = [(c["cell"], c["arch"], c["fallback"]) for c in json.load(open(sys.argv[1]))["include"]]
py = sys.argv[2]
want = [(f"torch{t}-py{py}-{a}", l, f) for t in ("2.14.0", "2.15.0")
        for a, l, f in (("sm80", "8.0", False), ("sm90", "9.0", False), ("fallback", "8.0;9.0+PTX", True))]
assert got == want, got
PY
# One run builds them all into one dist/: its index is the wheelhouse.
(cd "$work/proj" && "$opforge" build opforge.toml --dist-dir "$work/house") > "$work/build.log" 2>&1 \
  || { tail -60 "$work/build.log"; fail "the matrix build"; }
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
"$opforge" index "$work/house2" "$house" > /dev/null 2>&1 || fail "opforge index again"
diff -r -x summary.json -x SUMMARY.md "$house" "$work/house2" > "$work/repro.diff" \
  || { head -20 "$work/repro.diff"; fail "the index is not reproducible"; }
# Each plain wheel runs wherever one of its variants does: their SASS, and PTX for the newest.
for w in "$house"/*_x86_64.whl; do
  "$opforge" inspect "$w" --json > "$work/inspect.json" 2> /dev/null || fail "inspect $w"
  python3 - "$work/inspect.json" <<'PY' || fail "$(basename "$w") is not the union of its variants' code"
import json, sys
def walk(j):
    if isinstance(j, dict):
        for k, v in j.items():
            if k == "fatbin" and isinstance(v, list):
                yield from v
            else:
                yield from walk(v)
    elif isinstance(j, list):
        for v in j:
            yield from walk(v)
images = {i["name"] for i in walk(json.load(open(sys.argv[1])))}
assert images == {"sm_80", "sm_90", "compute_90"}, images
PY
done

# Each variant's index, read by plain pip: by name alone, a file of the plain wheel's name holding
# that variant's files (a copy: the plain wheel of that name is the fallback, another build).
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
node rtx120 'r["gpus"]["devices"] = [{"index": 0, "name": "NVIDIA RTX PRO 6000 Blackwell", "capability": "12.0"}]'
node v100 'r["gpus"]["devices"] = [{"index": 0, "name": "Tesla V100-SXM2-32GB", "capability": "7.0"}]'
reports=$(for n in h100 a100 h100_torch214 rtx120 v100 cpu_only old_driver; do echo "$work/nodes/$n.json"; done)
set +e
"$opforge" pick "$house" --nodes $reports > "$work/pick.txt" 2>&1; rc=$?
"$opforge" pick "$house" --nodes $reports --json > "$work/pick.json" 2> /dev/null
set -e
[ $rc -eq 1 ] || { cat "$work/pick.txt"; fail "pick: exit $rc, expected 1 (three nodes get no wheel)"; }
grep -q "3 nodes get no wheel from $house: v100 (gpu), cpu_only (gpu, driver), old_driver (driver); each wheel's reasons are above" "$work/pick.txt" ||
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
for node in ("v100", "cpu_only", "old_driver"):
    assert got[node]["wheel"] is None and got[node]["pip_index_url"] is None, got[node]
# The 12.0 GPU is newer than every variant's SASS and its plugin offers none of them: the fallback,
# by its compute_90 PTX, for pick and for a variant-aware installer alike.
plain = "tinyvar-0.1.0+cu130torch215-py3-none-manylinux_2_34_x86_64.whl"
assert got["rtx120"]["wheel"] == plain and got["rtx120"]["pip_index_url"] == f"file://{house}/simple", got["rtx120"]
assert got["rtx120"]["installer"]["same"], got["rtx120"]
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
  h100_torch214=x86_64 rtx120=x86_64 v100=x86_64 cpu_only=x86_64 old_driver=x86_64 > "$work/resolved.json" 2> "$work/resolved.log" \
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

# Every installer on every node: on the 12.0 GPU each gets the fallback, which runs; on the V100 pip
# and a variant-aware installer get the fallback, which cannot run there, and pick refuses: exit 1.
set +e
"$opforge" verify "$house" --nodes $reports > "$work/installs.txt" 2>&1; rc=$?
"$opforge" verify "$house" --nodes $reports --json > "$work/installs.json" 2> /dev/null
set -e
[ $rc -eq 1 ] || { cat "$work/installs.txt"; fail "verify --nodes: exit $rc, expected 1 (the V100, the CPU node and the old driver get a wheel that does not run)"; }
plain=tinyvar-0.1.0+cu130torch215-py3-none-manylinux_2_34_x86_64.whl
grep -A4 "^rtx120$" "$work/installs.txt" > "$work/rtx120.txt"
cat > "$work/rtx120.want" <<TXT
rtx120
  tinyvar
    pip       $plain: runs
    resolver  $plain: runs
    pick      $plain: runs
TXT
diff "$work/rtx120.want" "$work/rtx120.txt" || { cat "$work/installs.txt"; fail "verify --nodes on the 12.0 GPU"; }
grep -A4 "^v100$" "$work/installs.txt" > "$work/v100.txt"
v100_gpu="gpu: GPU 0 (Tesla V100-SXM2-32GB, 7.0): tinyvar/_k.so holds no code it can run (compute_90, sm_80, sm_90)"
cat > "$work/v100.want" <<TXT
v100
  tinyvar: FAILS
    pip       $plain: does not run; $v100_gpu
    resolver  $plain: does not run; $v100_gpu
    pick      refuses: no wheel fits
TXT
diff "$work/v100.want" "$work/v100.txt" || { cat "$work/installs.txt"; fail "verify --nodes on the V100"; }
grep -qF "opforge: error: an installer takes a wheel that does not run on: v100 (tinyvar); cpu_only (tinyvar); old_driver (tinyvar) (above: which and why)" "$work/installs.txt" \
  || { cat "$work/installs.txt"; fail "verify --nodes' error"; }
python3 - "$work/installs.json" <<'PY' || { cat "$work/installs.json"; fail "verify --nodes --json"; }
import json, sys
j = json.load(open(sys.argv[1]))
assert j["kind"] == "installers" and j["ok"] is False, j
by = {n: e for e in j["nodes"] for n in e["nodes"]}
for n in ("h100", "a100", "h100_torch214", "rtx120"):
    assert by[n]["ok"], by[n]
assert [t["installer"] for t in by["v100"]["takes"]] == ["pip", "resolver", "pick"]
assert by["v100"]["takes"][2]["wheel"] is None and by["v100"]["takes"][0]["verdict"] == "fails", by["v100"]
PY

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
