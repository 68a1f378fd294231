#!/usr/bin/env bash
# `opforge verify WHEEL --nodes REPORT…`: a wheel with sm_90 SASS, compute_90 PTX and AVX2 host code
# (tests/fixtures/rollout, compiled here with nvcc and g++, packed as cp311 manylinux_2_34 with
# Requires-Dist torch==2.15.*), checked against node reports that are this machine's own
# `opforge doctor --json`, edited per case: an H100 node that runs it, an A100 (no sm_80 code), a
# B200 (10.0: the PTX, JIT-compiled, with a new enough driver), an old driver, Debian 11's glibc, an
# x86-64-v2 CPU, another torch, another Python; then reports that are damaged, hostile, from an
# older or a newer opforge (unknown rows), a missing report (exit 2), and --json.
# usage: verify_nodes.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
opforge=$(realpath "$1") src=$2 work=$(realpath -m "$3")
. "$src/tests/e2e/lib.sh"
rm -rf "$work" && mkdir -p "$work/pkg/tinygpu" "$work/nodes"
cd "$work"
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
"$nvcc" -c -Xcompiler -fPIC -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
  "$src/tests/fixtures/rollout/kernel.cu" -o kernel.o
g++ -c -fPIC -O2 -mavx2 "$src/tests/fixtures/rollout/host.cpp" -o host.o
"$nvcc" -shared -Xcompiler -fPIC kernel.o host.o -o pkg/tinygpu/_k.cpython-311-x86_64-linux-gnu.so
echo "" > pkg/tinygpu/__init__.py
wheel=$work/tinygpu-0.1.0-cp311-cp311-manylinux_2_34_x86_64.whl
python3 - "$work/pkg" "$wheel" <<'PY'
import base64, hashlib, os, sys, zipfile
root, out = sys.argv[1], sys.argv[2]
files = {}
for d, _, names in os.walk(root):
    for n in sorted(names):
        p = os.path.join(d, n)
        files[os.path.relpath(p, root)] = open(p, "rb").read()
info = "tinygpu-0.1.0.dist-info/"
files[info + "METADATA"] = b"Metadata-Version: 2.1\nName: tinygpu\nVersion: 0.1.0\nRequires-Dist: torch==2.15.*\nRequires-Dist: numpy; extra == \"test\"\n"
files[info + "WHEEL"] = b"Wheel-Version: 1.0\nGenerator: verify_nodes.sh\nRoot-Is-Purelib: false\nTag: cp311-cp311-manylinux_2_34_x86_64\n"
record = ""
for name, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record += f"{name},sha256={digest},{len(data)}\n"
record += info + "RECORD,,\n"
files[info + "RECORD"] = record.encode()
with zipfile.ZipFile(out, "w") as z:
    for name, data in files.items():
        z.writestr(zipfile.ZipInfo(name, (2026, 1, 1, 0, 0, 0)), data)
PY
"$opforge" verify "$wheel" >/dev/null || fail "the test's own wheel does not verify"

# The reports: this machine's, with a GPU node's parts (its GPUs, driver, CPU, Python and torch) set per case.
"$opforge" doctor --json > base.json
node() {  # node NAME PYTHON-EXPRESSION: nodes/NAME.json, edited from base.json by the expression on `r`
  python3 - base.json "nodes/$1.json" "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["node"].update({"host": sys.argv[3], "glibc": "2.36", "glibcxx": "3.4.30", "cxxabi": "1.3.13",
                  "cpu_level": "x86-64-v3", "python": "3.11", "machine": "x86_64",
                  "driver": {"version": "580.65.06", "cuda": "13.0"}})
r["gpus"] = {"reader": "driver API", "devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "capability": "9.0"}]}
r["torch"] = {"python": "python3", "status": "CUDA 13.0", "version": "2.15.0+cu130", "cuda": "13.0"}
exec(sys.argv[4])
json.dump(r, open(sys.argv[2], "w"), indent=2)
PY
}
node h100 'pass'
node a100 'r["gpus"]["devices"] = [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "capability": "8.0"}]'
node b200 'r["gpus"]["devices"] = [{"index": 0, "name": "NVIDIA B200", "capability": "10.0"}]'
node b200_cuda128 'r["gpus"]["devices"] = [{"index": 0, "name": "NVIDIA B200", "capability": "10.0"}]; r["node"]["driver"] = {"version": "570.124.06", "cuda": "12.8"}'
node old_driver 'r["node"]["driver"] = {"version": "535.104.05", "cuda": "12.2"}'
node no_driver 'r["node"]["driver"] = None'
node debian11 'r["node"]["glibc"] = "2.31"; r["node"]["glibcxx"] = "3.4.28"'
node v2_cpu 'r["node"]["cpu_level"] = "x86-64-v2"'
node torch214 'r["torch"]["version"] = "2.14.0+cu130"'
node py312 'r["node"]["python"] = "3.12"'
node no_torch 'r["torch"] = {"python": "python3", "status": "torch not installed"}'
node older 'del r["node"]'
node newer 'r["node"]["format"] = 99'
node grace 'r["node"]["machine"] = "aarch64"; r["node"]["cpu_level"] = None'
node no_machine 'del r["node"]["machine"]'
node hostile 'r["gpus"]["devices"] = [{"index": -1, "capability": 9}]; r["node"]["glibc"] = ["2", "99"]; r["node"]["driver"] = "580"'
printf '{"gpus": ' > nodes/damaged.json

mkdir -p out
expect() {  # expect NAME RC PATTERN: `verify --nodes nodes/NAME.json` exits RC, its row matches PATTERN (ERE)
  local rc=0
  "$opforge" verify "$wheel" --nodes "nodes/$1.json" >"out/$1.txt" 2>"out/$1.err" || rc=$?
  [ "$rc" = "$2" ] || { cat "out/$1.txt" "out/$1.err"; fail "$1: exit $rc, expected $2"; }
  sed -n '3,$p' "out/$1.txt" | grep -Eq -- "$3" || { cat "out/$1.txt"; fail "$1: the row does not match: $3"; }
}
expect h100 0 '^  h100 +ok +GPU 0 \(NVIDIA H100 80GB HBM3, 9\.0\): sm_90; driver 580\.65\.06 ≥ 580 for CUDA 13\.0; x86_64; glibc 2\.36; x86-64-v3 code on an x86-64-v3 CPU; Python 3\.11 \(cp311\); torch 2\.15\.0\+cu130 satisfies torch==2\.15\.\*$'
expect a100 1 '^  a100 +fails +gpu: GPU 0 \(NVIDIA A100-SXM4-80GB, 8\.0\): tinygpu/_k\.cpython-311-x86_64-linux-gnu\.so holds no code it can run \(compute_90, (sm_75, )?sm_90\)$'
expect b200 0 'ok +GPU 0 \(NVIDIA B200, 10\.0\): compute_90 \(JIT\)'
expect b200_cuda128 1 'gpu: GPU 0 \(NVIDIA B200, 10\.0\): tinygpu/_k\.cpython-311-x86_64-linux-gnu\.so has only compute_90 PTX \(ISA 9\.0\) from CUDA 13\.0: the driver \(CUDA 12\.8\) cannot JIT it'
grep -q "driver: driver 570.124.06 is older than 580, the least CUDA 13.0 needs" out/b200_cuda128.txt ||
  fail "b200_cuda128: the driver row"
expect old_driver 1 'driver: driver 535\.104\.05 is older than 580, the least CUDA 13\.0 needs$'
expect no_driver 1 'driver: no NVIDIA driver on the node; CUDA 13\.0 code needs 580 or newer$'
expect debian11 1 'platform: manylinux_2_34_x86_64 needs glibc 2\.34, the node has 2\.31$'
expect v2_cpu 1 'cpu: the code needs x86-64-v3, the CPU is x86-64-v2 \(SIGILL at the first such instruction\)$'
expect torch214 1 'torch: the wheel requires torch==2\.15\.\*, the node has 2\.14\.0\+cu130 \(pip refuses it; forced in, `undefined symbol` at import\)$'
expect py312 1 'python: Python 3\.12, the wheel is for cp311 only$'
expect no_torch 0 'no torch on the node: pip installs torch==2\.15\.\* with the wheel'
expect older 1 '^  older\.json +unknown +driver, machine, platform, python: the report has no "node" part \(an older opforge wrote it\)'
expect newer 1 '^  newer +unknown +report: node\.format 99 is newer than this opforge reads \(1\): check it with the opforge that wrote it'
expect grace 1 'machine: wheel is for x86_64, node is aarch64$'
expect no_machine 1 '^  no_machine +unknown +machine: node\.machine is missing or not a string$'
expect hostile 1 '^  hostile +unknown +gpu: .*GPU entry 0: "index" must be a GPU number'
grep -q "driver: node.driver is missing or not an object" out/hostile.txt || fail "hostile: the driver row"
expect damaged 1 '^  damaged\.json +unknown +report: not JSON: parse error at line 1, column 10'

# The node check's --json report (tests/data/nodes/nodecheck_h100_a100.json, captured): one row per
# host. As captured it predates the runtime facts (unknown); edited with them and a driver, gpu01
# (H100) runs the wheel and gpu02 (A100) does not.
rc=0
"$opforge" verify "$wheel" --nodes "$src/tests/data/nodes/nodecheck_h100_a100.json" >out/nodecheck_old.txt 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat out/nodecheck_old.txt; fail "nodecheck (as captured): exit $rc"; }
grep -q "on 2 nodes: 0 ok" out/nodecheck_old.txt && grep -Eq "^  gpu01 +(unknown|fails) " out/nodecheck_old.txt &&
  grep -q "the node check report has no runtime facts" out/nodecheck_old.txt || { cat out/nodecheck_old.txt; fail "nodecheck (as captured): rows"; }
python3 - "$src/tests/data/nodes/nodecheck_h100_a100.json" nodes/nodecheck.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for rank in r["ranks"]:
    rank.update({"machine": "x86_64", "glibc": "2.36", "glibcxx": "3.4.30", "cxxabi": "1.3.13",
                 "cpu_level": "x86-64-v3", "driver": "580.65.06", "driver_cuda": "13.0", "python": "3.11.2"})
json.dump(r, open(sys.argv[2], "w"))
PY
rc=0
"$opforge" verify "$wheel" --nodes nodes/nodecheck.json >out/nodecheck.txt 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat out/nodecheck.txt; fail "nodecheck: exit $rc"; }
grep -Eq "^  gpu01 +ok +GPU 0 \(NVIDIA H100 80GB HBM3, 9\.0\): sm_90" out/nodecheck.txt &&
  grep -Eq "^  gpu02 +fails +gpu: GPU 0 \(NVIDIA A100-SXM4-80GB, 8\.0\)" out/nodecheck.txt || { cat out/nodecheck.txt; fail "nodecheck: rows"; }

# Reports captured on a real GPU node (an H200 with driver 580.159.04, Ubuntu 24.04, Python 3.12,
# torch 2.11; tests/data/nodes/{doctor,nodecheck}_h200.json), as written there: the GPU, driver and
# platform checks pass; this cp311 wheel for torch 2.15 fails on its Python and its torch.
for r in doctor_h200 nodecheck_h200; do
  rc=0
  "$opforge" verify "$wheel" --nodes "$src/tests/data/nodes/$r.json" >"out/$r.txt" 2>&1 || rc=$?
  [ "$rc" = 1 ] || { cat "out/$r.txt"; fail "$r: exit $rc"; }
  grep -Eq "^  vm +fails +python: Python 3\.12, the wheel is for cp311 only$" "out/$r.txt" &&
    grep -Eq "^ +torch: the wheel requires torch==2\.15\.\*, the node has 2\.11\.0\+cu130" "out/$r.txt" ||
    { cat "out/$r.txt"; fail "$r: the row"; }
done
"$opforge" verify "$wheel" --nodes "$src/tests/data/nodes/doctor_h200.json" --json >out/doctor_h200.json 2>/dev/null || true
python3 - out/doctor_h200.json <<'PY' || fail "doctor_h200: the checks"
import json, sys
c = {c["check"]: c["verdict"] for c in json.load(open(sys.argv[1]))["nodes"][0]["checks"]}
assert c == {"gpu": "ok", "driver": "ok", "machine": "ok", "platform": "ok", "cpu": "ok", "python": "fails", "torch": "fails"}, c
PY

# Several nodes in one run: one row each, exit 1 with the count; --json for CI.
rc=0
"$opforge" verify "$wheel" --nodes nodes/h100.json nodes/a100.json nodes/damaged.json >out/fleet.txt 2>out/fleet.err || rc=$?
[ "$rc" = 1 ] || fail "fleet: exit $rc"
grep -q "on 3 nodes: 1 ok, 1 fail, 1 unknown$" out/fleet.txt || { cat out/fleet.txt; fail "fleet: the headline"; }
grep -q "2 of 3 nodes would not run the wheel, or cannot be told" out/fleet.err || { cat out/fleet.err; fail "fleet: the error"; }
rc=0
"$opforge" verify "$wheel" --nodes nodes/h100.json nodes/a100.json --json >out/fleet.json 2>/dev/null || rc=$?
[ "$rc" = 1 ] || fail "fleet --json: exit $rc"
python3 - out/fleet.json <<'PY' || fail "fleet --json: its content"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["kind"] == "nodes" and j["ok"] is False, j
rows = {n["node"]: n for n in j["nodes"]}
assert rows["h100"]["verdict"] == "ok" and rows["a100"]["verdict"] == "fails", rows
assert [c["check"] for c in rows["h100"]["checks"]] == ["gpu", "driver", "machine", "platform", "cpu", "python", "torch"]
assert {c["check"]: c["verdict"] for c in rows["a100"]["checks"]}["gpu"] == "fails"
PY
# A report that is not there: bad input (exit 2); a record instead of a wheel: the same.
rc=0
"$opforge" verify "$wheel" --nodes nodes/nowhere.json >/dev/null 2>out/missing.err || rc=$?
[ "$rc" = 2 ] && grep -q "cannot read the node report nodes/nowhere.json" out/missing.err || { cat out/missing.err; fail "missing report: exit $rc"; }
rc=0
"$opforge" verify base.json --nodes nodes/h100.json >/dev/null 2>out/notwheel.err || rc=$?
[ "$rc" = 2 ] && grep -q -- "--nodes checks a wheel" out/notwheel.err || { cat out/notwheel.err; fail "not a wheel: exit $rc"; }
echo "OK: verify --nodes: h100 ok, b200 by JIT, a100/old driver/no driver/glibc/cpu/torch/python fail, damaged/hostile/older/newer unknown, a node check report's hosts"
