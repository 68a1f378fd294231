#!/usr/bin/env bash
# trixie_cuda.sh DIST_DIR OPFORGE OUT: the guides' "older CUDA, newer gcc" case, for real. A
# Debian 13 root with Debian's nvidia-cuda-toolkit 12.4 from non-free (its default gcc 14 is too
# new for CUDA 12.4; g++-13 is installed beside it) and PyPI's torch 2.6.0 (built for CUDA 12.4,
# an exact pair) in /opt/torch26. The small torch CUDAExtension (tests/fixtures/cuda_extension)
# is built through the command backend:
#   1. by opforge's platform wheel installed in the root (trixie_cuda_steps.sh): the exact
#      toolkit, gcc 13 while gcc 14 is the default, no DS_SKIP_CUDA_CHECK, no mismatch warning,
#      sm_90 code, the wheel imports there, two folders give the same bytes;
#   2. by this machine's opforge with `--root`: the same, its tag within the root's glibc;
#   3. DeepSpeed 0.19.8's cpu_adam and fused_adam with `--root`: a DeepSpeedCPUAdam step there
#      equals torch's AdamW.
# The root (~/.cache/opforge/roots/trixie-cuda, about 11 GB with torch) is made once, by CTest's
# fixture roots.trixie_cuda (tests/install/make_root.sh); pip's cache is shared with the host's.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
wheel=$(ls "$1"/opforge-*.whl) opforge=$(realpath "$2") out=$(realpath -m "$3")
source "$here/make_root.sh"
use_root trixie-cuda

start=$(date +%s)
mkdir -p "$out.in"
tar -C "$here/../fixtures" -cf "$out.in/cuda_extension.tar" cuda_extension
"$here/in_root.sh" "$ROOT" "$here/trixie_cuda_steps.sh" "$wheel" "$out.in/cuda_extension.tar" 2>&1 |
  tee "$out.steps.txt" || true
grep -q "^all steps passed" "$out.steps.txt" || { echo "FAIL: the steps inside the root"; exit 1; }
echo "steps took $(($(date +%s) - start)) s"
rm -rf "$out.inroot" && mkdir -p "$out.inroot" && cp "$ROOT"/tmp/opforge-test/a/dist/*.whl "$out.inroot/"

echo "== opforge build --root: the same extension from this machine"
rm -rf "$out" && mkdir -p "$out"
cp -r "$here/../fixtures/cuda_extension" "$out/proj"
cat >>"$out/proj/opforge.toml" <<'TOML'

[cuda]
version = "torch"
python = "/opt/torch26/bin/python"
TOML
sed -i 's|^command = .*|command = ["/opt/torch26/bin/python", "setup.py", "bdist_wheel"]|' "$out/proj/opforge.toml"
sed -i 's|^    packages=\["tinyscale"\],|&\n    install_requires=["torch"],|' "$out/proj/setup.py"
grep -q 'install_requires=\["torch"\]' "$out/proj/setup.py"
unset CUDA_HOME CUDA_PATH DS_SKIP_CUDA_CHECK TORCH_CUDA_ARCH_LIST
export OPFORGE_CACHE_DIR="$out/cache"
(cd "$out/proj" && "$opforge" plan opforge.toml --root "$ROOT") >"$out/plan.txt" 2>&1 || { cat "$out/plan.txt"; exit 1; }
cat "$out/plan.txt"
grep -Eq '^CUDA toolkit +12\.4 at /usr$' "$out/plan.txt" || { echo "FAIL: plan --root does not choose the root's CUDA 12.4"; exit 1; }
(cd "$out/proj" && "$opforge" build opforge.toml --root "$ROOT") >"$out/build.txt" 2>&1 || { cat "$out/build.txt"; exit 1; }
cat "$out/build.txt"
grep -q "^root: $ROOT (Debian GNU/Linux 13 (trixie)), glibc 2\.4[0-9]" "$out/build.txt" || { echo "FAIL: no root line"; exit 1; }
! grep -qi "warning:.*\(mismatch\|minor\|DS_SKIP\)" "$out/build.txt" || { echo "FAIL: the build warned of a CUDA mismatch"; exit 1; }
whl=$(ls "$out"/proj/dist/*.whl)
glibc=$(sed -n 's/^root: .*glibc 2\.\([0-9]*\).*/\1/p' "$out/build.txt" | head -1)
tag=$(basename "$whl" .whl); tag=${tag##*-}
case "$tag" in
  manylinux_2_*_x86_64) minor=${tag#manylinux_2_}; minor=${minor%_x86_64}
    [ "$minor" -le "$glibc" ] || { echo "FAIL: $tag is above the root's glibc 2.$glibc"; exit 1; } ;;
  *) echo "FAIL: $(basename "$whl") is not tagged manylinux (torch's libraries are torch's; the root's glibc is its floor)"; exit 1 ;;
esac
"$opforge" inspect "$whl" >"$out/inspect.txt" 2>&1 || { cat "$out/inspect.txt"; exit 1; }
grep -q sm_90 "$out/inspect.txt" || { cat "$out/inspect.txt"; echo "FAIL: no sm_90 code"; exit 1; }
cat >"$out/import.sh" <<'SH'
set -euo pipefail
cd /tmp/opforge-test
/opt/torch26/bin/python -m zipfile -e in/*.whl site
PYTHONPATH=site /opt/torch26/bin/python -c "
import torch, tinyscale
assert tinyscale.cuda_version() == 12040, tinyscale.cuda_version()
assert torch.equal(tinyscale.scale(torch.arange(4.), 2.0), torch.arange(4.) * 2)
print('imports in the root with torch', torch.__version__)"
SH
"$here/in_root.sh" "$ROOT" "$out/import.sh" "$whl"
# The same extension, byte for byte, from the opforge inside and the one here (their WHEEL files
# differ only in the Generator line: the platform wheel's opforge names its commit).
ext() { python3 -c "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); sys.stdout.buffer.write(z.read([n for n in z.namelist() if n.endswith('.so')][0]))" "$1"; }
cmp <(ext "$whl") <(ext "$(ls "$out.inroot"/*.whl)") || { echo "FAIL: the extension differs between the build in the root and --root"; exit 1; }

echo "== DeepSpeed 0.19.8's cpu_adam and fused_adam with torch 2.6 and CUDA 12.4, with --root"
sdist=$("$here/../e2e/fetch_sdist.sh" deepspeed 0.19.8)
mkdir -p "$out/ds" && tar -xzf "$sdist" -C "$out/ds"
cat >"$out/ds/deepspeed.toml" <<'TOML'
[package]
name = "deepspeed"
version = "0.19.8"
local_version = "cu{cuda_major}{cuda_minor}torch{torch_major}{torch_minor}"

[source]
path = "deepspeed-0.19.8"

[cuda]
version = "torch"
python = "/opt/torch26/bin/python"

[arch]
list = "8.0"

[ops]
cpu_adam = true
fused_adam = true

[build]
backend = "command"
command = ["/opt/torch26/bin/python", "setup.py", "bdist_wheel"]
TOML
for v in $(env | grep -o '^DS_BUILD_[A-Z0-9_]*' || true); do unset "$v"; done
t0=$(date +%s)
(cd "$out/ds" && SOURCE_DATE_EPOCH=1700000000 "$opforge" build deepspeed.toml --root "$ROOT") >"$out/ds.txt" 2>&1 ||
  { tail -40 "$out/ds.txt"; echo "FAIL: DeepSpeed build"; exit 1; }
echo "DeepSpeed built in $(($(date +%s) - t0)) s"
grep -E '^ +built +(cpu_adam|fused_adam)' "$out/ds.txt"
[ "$(grep -cE '^ +built +(cpu_adam|fused_adam) ' "$out/ds.txt")" = 2 ] || { cat "$out/ds.txt"; echo "FAIL: not both ops built"; exit 1; }
! grep -qi "warning:.*\(mismatch\|minor\|DS_SKIP\)" "$out/ds.txt" || { echo "FAIL: a CUDA mismatch warning"; exit 1; }
grep -q '^GPU code: sm_80' "$out/ds.txt" || { echo "FAIL: not sm_80"; exit 1; }
dswhl=$(ls "$out"/ds/dist/deepspeed-0.19.8+cu124torch26-cp313-cp313-*.whl)
cat >"$out/ds-import.sh" <<'SH'
set -euo pipefail
cd /tmp/opforge-test
/opt/torch26/bin/python -m zipfile -e in/deepspeed-*.whl site
PYTHONPATH=site /opt/torch26/bin/python - <<'PY'
import torch
from deepspeed.ops.adam import DeepSpeedCPUAdam
torch.manual_seed(0)
init, grad = torch.randn(1000), torch.randn(1000)
ds_p, ref_p = torch.nn.Parameter(init.clone()), torch.nn.Parameter(init.clone())
ds = DeepSpeedCPUAdam([ds_p], lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, adamw_mode=True)
ref = torch.optim.AdamW([ref_p], lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
ds_p.grad, ref_p.grad = grad.clone(), grad.clone()
ds.step()
ref.step()
diff = (ds_p.detach() - ref_p.detach()).abs().max().item()
assert diff < 1e-6, diff
print("DeepSpeedCPUAdam (prebuilt cpu_adam) equals AdamW with torch", torch.__version__, "max diff", diff)
PY
SH
"$here/in_root.sh" "$ROOT" "$out/ds-import.sh" "$dswhl"
echo "trixie_cuda: $(basename "$whl") built in the root and from this machine with --root; $(basename "$dswhl")"
